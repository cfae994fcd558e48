"""Environment steps per second, bare and wrapped, and the random policy's return, per environment.

    .venv/bin/python -m benchmarks.environments [--envs lbf/Foraging-8x8-2p-2f-coop-v3,rware/rware-tiny-2ag-v2]
    .venv/bin/python -m benchmarks.environments --envs mamujoco/HalfCheetah-2x3,mamujoco/Ant-4x2

For each environment name:

  bare_sps      the environment as its package makes it (`family.make`), random actions
  wrapped_sps   `make_environment_factory(name)`'s MultiAgentEnvironment (specs checked, legal
                actions, global state read every step), random legal actions
  random_return the uniformly random (legal) policy's return summed over agents, mean of
                `--episodes` episodes through the evaluator's loop (as run summaries report it)
"""

import os
import sys
from typing import Any, Callable, Dict

if __package__ in (None, ""):  # Run as a file (python benchmarks/<name>.py): find the package.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import common  # noqa: E402

DEFAULT_ENVS = "lbf/Foraging-8x8-2p-2f-coop-v3,lbf/Foraging-2s-8x8-2p-2f-coop-v3,rware/rware-tiny-2ag-v2"
STEPS_PER_CALL = 100


def bare_stepper(name: str) -> Callable[[], int]:
    """Steps the environment its family makes (before any wrapper) with random actions: a
    Gymnasium env (LBF, RWARE: Tuple spaces) or a PettingZoo parallel env (MaMuJoCo)."""
    import wrappers.registry as registry  # pylint: disable=import-outside-toplevel

    family = registry._resolve(name)  # pylint: disable=protected-access
    env = family.make(name.partition("/")[2])
    env.reset(seed=0)
    if hasattr(env, "possible_agents"):
        for index, agent in enumerate(env.possible_agents):
            env.action_space(agent).seed(index)

        def step() -> int:
            for _ in range(STEPS_PER_CALL):
                env.step({agent: env.action_space(agent).sample() for agent in env.agents})
                if not env.agents:
                    env.reset()
            return STEPS_PER_CALL

        return step
    env.action_space.seed(0)

    def step() -> int:
        for _ in range(STEPS_PER_CALL):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if (terminated if isinstance(terminated, bool) else all(terminated)) or truncated is True:
                env.reset()
        return STEPS_PER_CALL

    return step


def wrapped_stepper(name: str) -> Callable[[], int]:
    """Steps the wrapped environment with random legal actions, reading the global state."""
    from mava_systems.acting.random_policy import RandomExecutor  # pylint: disable=import-outside-toplevel
    import wrappers  # pylint: disable=import-outside-toplevel

    env = wrappers.make_environment_factory(name)(seed=0)
    policy = RandomExecutor(env.action_spec(), seed=0)
    state = {"timestep": env.reset()}

    def step() -> int:
        for _ in range(STEPS_PER_CALL):
            state["timestep"] = env.step(policy.select_actions(state["timestep"].observation))
            env.get_extras()
        return STEPS_PER_CALL

    return step


def main() -> None:
    parser = common.make_parser("environments", __doc__.splitlines()[0], seconds=5.0)
    parser.add_argument("--envs", default=DEFAULT_ENVS, help=f"comma-separated names (default {DEFAULT_ENVS})")
    parser.add_argument("--episodes", type=int, default=100, help="random-policy episodes (default 100)")
    parser.add_argument("--clock", choices=sorted(common.CLOCKS), default="wall",
                        help="wall: steps per second of wall time (default); cpu: per second of this "
                             "process's CPU time (steadier on a machine busy with other work)")
    args = common.check_args(parser.parse_args())
    from mava_systems.acting.random_policy import random_policy_return  # pylint: disable=import-outside-toplevel
    import wrappers  # pylint: disable=import-outside-toplevel

    figures: Dict[str, Any] = {}
    rows = []
    for name in args.envs.split(","):
        rates = common.measure_interleaved({"bare": bare_stepper(name), "wrapped": wrapped_stepper(name)},
                                           args.repeats, args.seconds, args.warmup, args.clock)
        bare, wrapped = common.median(rates["bare"]), common.median(rates["wrapped"])
        baseline = random_policy_return(wrappers.make_environment_factory(name), episodes=args.episodes)
        figures[name] = {"bare_sps": bare, "wrapped_sps": wrapped, "wrapped_over_bare": common.ratio(wrapped, bare),
                         "random_return": baseline.mean_return, "random_return_std": baseline.std_return,
                         "random_return_episodes": baseline.episodes}
        rows.append((name, common.fmt(bare), common.fmt(wrapped), common.fmt(common.ratio(wrapped, bare), 2),
                     common.fmt(baseline.mean_return, 4), baseline.episodes))
    common.print_table("Environment steps per second (median) and the random policy's return",
                       ["environment", "bare steps/s", "wrapped steps/s", "wrapped/bare", "random return",
                        "episodes"], rows)
    common.emit(args, figures, {"benchmark": "environments", "envs": args.envs, "episodes": args.episodes})


if __name__ == "__main__":
    main()
