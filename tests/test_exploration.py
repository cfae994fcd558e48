"""Exploration: per-executor epsilons, schedules, and epsilon-greedy over legal actions."""

import numpy as np
import pytest
import sonnet as snt
import tensorflow as tf

import wrappers
from mava_systems import madqn
from mava_systems.acting.exploration import (ConstantEpsilon, LinearEpsilon,
                                             default_schedules, executor_epsilons,
                                             parse_schedule)
from mava_systems.madqn.execution import MADQNExecutor
from wrappers import OLT

NUM_ACTIONS = 9  # tictactoe


# --------------------------------------------------------------------------- epsilons


@pytest.mark.parametrize("n", range(1, 9))
def test_executor_epsilons_match_acme(n):
    epsilons = executor_epsilons(n)
    assert isinstance(epsilons, list) and len(epsilons) == n
    assert all(isinstance(e, float) for e in epsilons)
    np.testing.assert_allclose(epsilons, np.flip(np.logspace(1, 8, n, base=0.4)), rtol=1e-12)
    assert epsilons[-1] == pytest.approx(0.4)
    assert all(0.0 < e <= 0.4 for e in epsilons)
    assert epsilons == sorted(epsilons)  # Executor 0 explores least.


def test_executor_epsilons_end_points():
    epsilons = executor_epsilons(4)
    assert epsilons[0] == pytest.approx(0.4 ** 8) == pytest.approx(0.00065536)
    assert epsilons[-1] == pytest.approx(0.4)
    assert executor_epsilons(1) == [pytest.approx(0.4)]


@pytest.mark.parametrize("n", [0, -1, -8])
def test_executor_epsilons_need_a_positive_count(n):
    with pytest.raises(ValueError):
        executor_epsilons(n)


def test_default_schedules_are_constant_epsilons():
    schedules = default_schedules(3)
    assert all(isinstance(s, ConstantEpsilon) for s in schedules)
    for schedule, epsilon in zip(schedules, executor_epsilons(3)):
        assert schedule(0) == schedule(10 ** 9) == pytest.approx(epsilon)


@pytest.mark.parametrize("num_executors", [1, 3, 5])
def test_madqn_gives_executor_i_its_epsilon(line_world_factory, tmp_run_dir, num_executors):
    system = madqn.MADQN(line_world_factory, num_executors=num_executors, run_dir=tmp_run_dir)
    assert len(system.exploration_schedules) == num_executors
    for i, (schedule, epsilon) in enumerate(zip(system.exploration_schedules,
                                                 executor_epsilons(num_executors))):
        assert schedule(0) == pytest.approx(epsilon), i
        assert schedule(12345) == pytest.approx(epsilon), i
    # Each executor has its own schedule object (nothing shared between executors).
    assert len({id(s) for s in system.exploration_schedules}) == num_executors


def test_madqn_takes_custom_schedules(line_world_factory, tmp_run_dir):
    schedules = [LinearEpsilon(1.0, 0.1, 100), ConstantEpsilon(0.5)]
    system = madqn.MADQN(line_world_factory, num_executors=2, exploration_schedules=schedules,
                         run_dir=tmp_run_dir)
    assert system.exploration_schedules == schedules
    assert system.exploration_schedules is not schedules  # Copied, not aliased.


@pytest.mark.parametrize("num_schedules", [0, 1, 3])
def test_madqn_rejects_a_wrong_number_of_schedules(line_world_factory, tmp_run_dir, num_schedules):
    with pytest.raises(ValueError, match="schedules"):
        madqn.MADQN(line_world_factory, num_executors=2,
                    exploration_schedules=[ConstantEpsilon(0.1)] * num_schedules,
                    run_dir=tmp_run_dir)


# --------------------------------------------------------------------------- schedules


def test_linear_epsilon_values():
    schedule = LinearEpsilon(1.0, 0.1, 100)
    assert schedule(0) == pytest.approx(1.0)
    assert schedule(50) == pytest.approx(0.55)
    assert schedule(25) == pytest.approx(0.775)
    assert schedule(100) == pytest.approx(0.1)
    assert schedule(101) == pytest.approx(0.1)
    assert schedule(10 ** 9) == pytest.approx(0.1)
    values = [schedule(step) for step in range(0, 120)]
    assert all(a >= b for a, b in zip(values, values[1:]))  # Never increases.
    # Rising schedules work too.
    assert LinearEpsilon(0.0, 0.5, 10)(5) == pytest.approx(0.25)


@pytest.mark.parametrize("args", [(1.1, 0.1, 10), (-0.1, 0.1, 10), (1.0, 1.5, 10), (1.0, -0.5, 10),
                                  (1.0, 0.1, 0), (1.0, 0.1, -5)])
def test_linear_epsilon_rejects_bad_arguments(args):
    with pytest.raises(ValueError):
        LinearEpsilon(*args)


@pytest.mark.parametrize("epsilon", [-0.01, 1.01])
def test_constant_epsilon_rejects_bad_values(epsilon):
    with pytest.raises(ValueError):
        ConstantEpsilon(epsilon)


# --------------------------------------------------------------------------- epsilon-greedy


class FixedQ(snt.Module):
    """A Q-network returning the same values for every observation.

    The values are a variable: Sonnet's `module.variables` (which the networks'
    copying and the variable client use) refuses a module without any.
    """

    def __init__(self, q_values):
        super().__init__(name="fixed_q")
        self._q = tf.Variable(q_values, dtype=tf.float32, trainable=False)

    def __call__(self, observation):
        return tf.tile(self._q[None], [tf.shape(observation)[0], 1])


# Best action 0 (then 1, 2, ...), so the greedy legal action is the lowest legal index.
Q_VALUES = np.arange(NUM_ACTIONS, 0, -1).astype(np.float32)


@pytest.fixture(scope="module")
def tictactoe_system(tmp_path_factory):
    factory = wrappers.make_environment_factory("classic/tictactoe_v3")
    return madqn.MADQN(factory, network_factory=lambda obs_spec, act_spec: FixedQ(Q_VALUES),
                       run_dir=str(tmp_path_factory.mktemp("ttt") / "run"))


@pytest.fixture(scope="module")
def greedy_executor(tictactoe_system):
    builder = tictactoe_system.builder
    return builder.make_executor(builder.make_networks(), ConstantEpsilon(0.0), seed=1)


@pytest.fixture(scope="module")
def random_executor(tictactoe_system):
    builder = tictactoe_system.builder
    return builder.make_executor(builder.make_networks(), ConstantEpsilon(1.0), seed=2)


def hand_made_observations(agents, masks):
    """OLTs with zero observations (tictactoe's shape) and the given legal-action masks."""
    return {agent: OLT(np.zeros((3, 3, 2), np.int8), np.asarray(mask, np.float32),
                       np.zeros((), np.float32))
            for agent, mask in zip(agents, masks)}


def test_greedy_picks_the_best_legal_action(tictactoe_system, greedy_executor):
    agents = tictactoe_system.environment_spec.agents
    assert agents == ["player_1", "player_2"]
    mask_a = np.ones(NUM_ACTIONS)
    mask_a[[0, 1]] = 0  # The two best actions are illegal.
    mask_b = np.zeros(NUM_ACTIONS)
    mask_b[[5, 8]] = 1
    for _ in range(20):
        actions = greedy_executor.select_actions(hand_made_observations(agents, [mask_a, mask_b]))
        assert actions == {"player_1": 2, "player_2": 5}
    # With every action legal, the greedy action is the best one.
    actions = greedy_executor.select_actions(hand_made_observations(agents, [np.ones(NUM_ACTIONS)] * 2))
    assert actions == {"player_1": 0, "player_2": 0}


def test_no_legal_action_means_every_action_is_legal(tictactoe_system, greedy_executor):
    agents = tictactoe_system.environment_spec.agents
    actions = greedy_executor.select_actions(
        hand_made_observations(agents, [np.zeros(NUM_ACTIONS), np.eye(NUM_ACTIONS)[7]]))
    assert actions == {"player_1": 0, "player_2": 7}


def test_random_actions_are_legal_and_cover_the_legal_set(tictactoe_system, random_executor):
    agents = tictactoe_system.environment_spec.agents
    legal_a = [1, 4, 7]
    legal_b = [0, 8]
    masks = [np.isin(np.arange(NUM_ACTIONS), legal_a), np.isin(np.arange(NUM_ACTIONS), legal_b)]
    chosen = {agent: [] for agent in agents}
    for _ in range(300):
        actions = random_executor.select_actions(hand_made_observations(agents, masks))
        for agent in agents:
            chosen[agent].append(int(actions[agent]))
    assert set(chosen["player_1"]) == set(legal_a)
    assert set(chosen["player_2"]) == set(legal_b)
    # Roughly uniform over the legal actions (300 draws, expected 100 each for player_1).
    counts = np.bincount(chosen["player_1"], minlength=NUM_ACTIONS)[legal_a]
    assert counts.min() > 60, counts


def play_tictactoe(executor, episodes, seed):
    """Plays whole games; yields (legal mask of the agent to move, its chosen action)."""
    env = wrappers.make_environment_factory("classic/tictactoe_v3")(seed=seed)
    for _ in range(episodes):
        timestep = env.reset()
        while not timestep.last():
            agent = env.current_agent
            legal = timestep.observation[agent].legal_actions.copy()
            actions = executor.select_actions(timestep.observation)
            yield legal, int(actions[agent])
            timestep = env.step(actions)
    env.close()


def test_random_actions_in_tictactoe_are_always_legal(random_executor):
    moves = list(play_tictactoe(random_executor, episodes=25, seed=3))
    assert len(moves) >= 25 * 5  # Every game has at least five moves.
    for legal, action in moves:
        assert legal.sum() > 0
        assert legal[action] == 1, (legal, action)
    # epsilon=1 is not greedy: first moves differ between games.
    assert len({action for legal, action in moves if legal.sum() == NUM_ACTIONS}) > 1


def test_greedy_actions_in_tictactoe_are_the_best_legal_ones(greedy_executor):
    moves = list(play_tictactoe(greedy_executor, episodes=3, seed=4))
    for legal, action in moves:
        assert legal[action] == 1
        best = int(np.argmax(np.where(legal > 0, Q_VALUES, -np.inf)))
        assert action == best, (legal, action)


def test_executor_epsilon_follows_its_schedule_per_observed_step(tictactoe_system):
    builder = tictactoe_system.builder
    executor = builder.make_executor(builder.make_networks(), LinearEpsilon(1.0, 0.0, 10))
    assert isinstance(executor, MADQNExecutor)
    assert executor.epsilon == pytest.approx(1.0)
    for _ in range(5):
        executor.observe({}, None)  # No adder: only the step count moves.
    assert executor.num_steps == 5
    assert executor.epsilon == pytest.approx(0.5)
    for _ in range(10):
        executor.observe({}, None)
    assert executor.epsilon == pytest.approx(0.0)


# --------------------------------------------------------------------------- --exploration


def test_parse_schedule_reads_both_formats_and_empty_means_the_default():
    assert parse_schedule("") is None and parse_schedule("  ") is None
    constant = parse_schedule("constant:0.1")
    assert isinstance(constant, ConstantEpsilon) and constant(0) == constant(10**9) == 0.1
    linear = parse_schedule("linear:1, 0.05, 2e5")
    assert isinstance(linear, LinearEpsilon)
    assert [linear(0), linear(100_000), linear(200_000), linear(10**7)] == pytest.approx(
        [1.0, 0.525, 0.05, 0.05])


@pytest.mark.parametrize("text, message", [
    ("linear:1,0.05", "expected 'constant:EPSILON' or 'linear:START,END,DECAY_STEPS'"),
    ("exponential:0.1", "expected 'constant:EPSILON'"),
    ("constant", "expected 'constant:EPSILON'"),
    ("constant:1.5", r"epsilon must be in \[0, 1\], got 1.5"),
    ("linear:1,0.05,0", "decay_steps must be positive, got 0"),
    ("linear:1,0.05,10.5", "DECAY_STEPS must be a whole number, got 10.5"),
    ("constant:abc", "could not convert string to float"),
])
def test_parse_schedule_names_what_is_wrong(text, message):
    with pytest.raises(ValueError, match=f"^exploration schedule {text!r}: .*{message}"):
        parse_schedule(text)
