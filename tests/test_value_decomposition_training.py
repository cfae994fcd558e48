"""VDN and QMIX trainers against a local replay: QMIX learns what VDN cannot, and resumes whole.

The two-step game (`debug/two_step_v0`, the QMIX paper's) separates them.

Replay is filled by uniformly random play and each system learns off-policy
(one-step targets, squared TD error) in this process, then plays greedily.
Under uniform play VDN's additive team value gives the 2B branch at best 6.5
(the least-squares sum fit of [[0, 1], [1, 8]]), below 2A's 7, so its greedy
agent_0 takes 2A and returns 7; QMIX's state-conditioned monotonic mixer
represents 2B and returns the optimal 8. Each system takes about 10 s.
"""

import contextlib
import gc
import os
import re
import threading

from acme.utils import counting
import numpy as np
import pytest
import reverb
import tensorflow as tf

from mava_systems import qmix, vdn
from mava_systems.acting.environment_loop import EnvironmentLoop
from mava_systems.acting.exploration import ConstantEpsilon
import wrappers
from wrappers.two_step_game import ADDITIVE_RETURN, OPTIMAL_RETURN

TARGET_UPDATE_PERIOD = 50
TRAINER_STEPS = 1500


def two_step_system(system_class, config_class, run_dir, seed=0):
    """`system_class` on the two-step game, set to learn off-policy with one-step targets."""
    config = config_class(n_step=1, discount=0.99, batch_size=32, min_replay_size=100,
                          samples_per_insert=None, prefetch_size=0, learning_rate=1e-3,
                          huber_loss_parameter=None, target_update_period=TARGET_UPDATE_PERIOD,
                          hidden_sizes=(32,), seed=seed)
    return system_class(wrappers.make_environment_factory("debug/two_step_v0"), config=config,
                        run_dir=run_dir)


@contextlib.contextmanager
def replay_of_uniform_play(system, episodes=300, seed=0, networks=None):
    """A local replay server filled with `episodes` of uniformly random play (by an executor of
    `networks`, default new ones); yields its client."""
    builder = system.builder
    server = reverb.Server(system.replay())
    client = reverb.Client(f"localhost:{server.port}")
    adder = builder.make_adder(client)
    try:
        explorer = builder.make_executor(networks or builder.make_networks(), ConstantEpsilon(1.0),
                                         adder=adder, seed=seed)
        loop = EnvironmentLoop(system.environment_factory(seed=seed), explorer,
                               stop_event=threading.Event())
        for _ in range(episodes):
            loop.run_episode()
        yield client
    finally:
        adder._writer.close()  # pylint: disable=protected-access
        gc.collect()
        server.stop()


def train_on_uniform_play(system_class, config_class, run_dir, seed=0):
    """Trains `system_class` from 300 uniformly random episodes; (greedy return, trainer)."""
    system = two_step_system(system_class, config_class, run_dir, seed)
    builder = system.builder
    with replay_of_uniform_play(system, seed=seed) as client:
        networks = builder.make_networks()
        trainer = builder.make_trainer(networks, builder.make_dataset_iterator(client),
                                       counter=counting.Counter(), checkpoint=False)
        for _ in range(TRAINER_STEPS):
            trainer.step()
    greedy = builder.make_executor(networks, ConstantEpsilon(0.0), seed=seed)
    result = EnvironmentLoop(system.environment_factory(seed=seed), greedy,
                             stop_event=threading.Event()).run_episode()
    return result["episode_return/agent_0"], trainer  # Both agents get the team's reward.


def test_qmix_reaches_the_optimal_return_of_the_two_step_game(tmp_path):
    greedy_return, trainer = train_on_uniform_play(qmix.QMIX, qmix.QMIXConfig, str(tmp_path))
    assert greedy_return == OPTIMAL_RETURN

    # One optimizer step per trainer step, for every network and the mixer together.
    state = trainer.state
    assert [key for key in state if key.startswith("optimizer/")] == ["optimizer/joint"]
    assert int(state["optimizer/joint"].step.numpy()) == trainer.num_steps == TRAINER_STEPS
    # The target mixer was copied with the target networks at the last multiple of the period.
    assert TRAINER_STEPS % TARGET_UPDATE_PERIOD == 0
    for online, target in ((state["module/mixer"], state["target_module/mixer"]),
                           (state["q_network/agent"], state["target_q_network/agent"])):
        for online_variable, target_variable in zip(online.variables, target.variables):
            np.testing.assert_array_equal(online_variable.numpy(), target_variable.numpy())


def test_vdn_cannot_represent_the_two_step_game_and_returns_less(tmp_path):
    greedy_return, trainer = train_on_uniform_play(vdn.VDN, vdn.VDNConfig, str(tmp_path))
    assert greedy_return == ADDITIVE_RETURN < OPTIMAL_RETURN
    assert "target_module/mixer" not in trainer.state  # A sum has nothing to copy.


def numpy_variables(module):
    return [variable.numpy() for variable in module.variables]


def test_a_resumed_trainer_continues_the_mixer_its_target_and_their_optimizer_slots(tmp_path):
    system = two_step_system(qmix.QMIX, qmix.QMIXConfig, str(tmp_path / "run"))
    builder = system.builder
    with replay_of_uniform_play(system, episodes=60) as client:
        first = builder.make_trainer(builder.make_networks(), builder.make_dataset_iterator(client),
                                     checkpoint=True)
        for _ in range(TARGET_UPDATE_PERIOD + 3):  # The target mixer is copied once, then lags.
            first.step()
        first._checkpointing.save(force=True)  # pylint: disable=protected-access
        second = builder.make_trainer(builder.make_networks(), builder.make_dataset_iterator(client),
                                      checkpoint=True)
    assert second.num_steps == first.num_steps == TARGET_UPDATE_PERIOD + 3
    for key in ("module/mixer", "target_module/mixer", "q_network/agent"):
        for saved, restored in zip(numpy_variables(first.state[key]),
                                   numpy_variables(second.state[key])):
            np.testing.assert_array_equal(saved, restored)
    assert int(second.state["optimizer/joint"].step.numpy()) == first.num_steps
    # The checkpoint holds Adam's moments of every variable of the mixer and the network.
    saved = tf.train.list_variables(tf.train.latest_checkpoint(
        os.path.join(system.run_dir, "checkpoints", "trainer")))
    # (A "/" in a checkpoint key is written ".S".)
    moments = [name for name, _ in saved if re.match(r"optimizer\.Sjoint/[mv]/\d+/", name)]
    num_variables = len(first.state["module/mixer"].trainable_variables) + len(
        first.state["q_network/agent"].trainable_variables)
    assert len(moments) == 2 * num_variables
