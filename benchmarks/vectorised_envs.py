"""Environment steps per second of the vectorised environments against the reference packages.

    .venv/bin/python -m benchmarks.vectorised_envs [--envs lbf/Foraging-8x8-2p-2f-coop-v3,mpe/simple_spread_v3]
        [--batch_sizes 1,16,128,1024] [--clock cpu]

For each environment name, with uniformly random actions (illegal ones included: both
implementations replace them by the package's rule), one core:

  reference bare     the package's environment (Gymnasium or PettingZoo parallel), one step
                     per call
  reference wrapped  `make_environment_factory(name)`'s MultiAgentEnvironment, reading the
                     global state every step (what an executor steps today)
  vectorised B=b     `make_vectorised_environment(name, b)`: one call steps b environments,
                     with legal actions and global states; b environment steps per call

All variants are measured in turns (see `common.measure_interleaved`); the table gives the
median of `--repeats` runs and each rate over the wrapped reference's.
"""

import os
import sys
from typing import Any, Callable, Dict, List

if __package__ in (None, ""):  # Run as a file (python benchmarks/<name>.py): find the package.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import common  # noqa: E402

DEFAULT_ENVS = (
    "lbf/Foraging-8x8-2p-2f-coop-v3,lbf/Foraging-2s-8x8-2p-2f-coop-v3,mpe/simple_spread_v3,rware/rware-tiny-2ag-v2")
DEFAULT_BATCH_SIZES = "1,16,128,1024"
ENV_STEPS_PER_CALL = 128  # reference steps per timed call (vectorised: one batched step per call)
ACTION_SETS = 64  # distinct random joint actions cycled through


def reference_bare_stepper(name: str) -> Callable[[], int]:
    """Steps the package's environment (a Gymnasium env with Tuple spaces, or a PettingZoo
    parallel env) with random actions, resetting it at each episode's end."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    import wrappers.registry as registry  # pylint: disable=import-outside-toplevel

    env = registry._resolve(name).make(name.partition("/")[2])  # pylint: disable=protected-access
    env.reset(seed=0)
    parallel = hasattr(env, "possible_agents")
    spaces = [env.action_space(agent) for agent in env.possible_agents] if parallel else env.action_space.spaces
    draws = np.random.default_rng(0).integers(0, int(spaces[0].n), (ACTION_SETS, len(spaces))).tolist()
    actions = ([dict(zip(env.possible_agents, row)) for row in draws] if parallel
               else [tuple(row) for row in draws])
    counter = [0]

    def step() -> int:
        for _ in range(ENV_STEPS_PER_CALL):
            counter[0] += 1
            _, _, terminated, truncated, _ = env.step(actions[counter[0] % ACTION_SETS])
            if (not env.agents) if parallel else (terminated is True or truncated is True):
                env.reset()
        return ENV_STEPS_PER_CALL

    return step


def reference_wrapped_stepper(name: str) -> Callable[[], int]:
    """Steps the wrapped environment with random actions, reading the global state every step."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    import wrappers  # pylint: disable=import-outside-toplevel

    env = wrappers.make_environment_factory(name)(seed=0)
    env.reset()
    num_actions = env.num_actions(env.agents[0])
    draws = np.random.default_rng(0).integers(0, num_actions, (ACTION_SETS, len(env.agents)))
    actions = [{agent: np.int32(action) for agent, action in zip(env.agents, row)} for row in draws]
    counter = [0]

    def step() -> int:
        for _ in range(ENV_STEPS_PER_CALL):
            counter[0] += 1
            env.step(actions[counter[0] % ACTION_SETS])
            env.get_extras()
        return ENV_STEPS_PER_CALL

    return step


def vectorised_stepper(name: str, num_envs: int) -> Callable[[], int]:
    """Steps `num_envs` vectorised environments in one call with random actions."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    from wrappers.vectorised import make_vectorised_environment  # pylint: disable=import-outside-toplevel

    env = make_vectorised_environment(name, num_envs)
    env.reset(list(range(num_envs)))
    draws = np.random.default_rng(0).integers(0, env.action_spec()[env.agents[0]].num_values,
                                               (ACTION_SETS, num_envs, env.num_agents))
    counter = [0]

    def step() -> int:
        counter[0] += 1
        env.step(draws[counter[0] % ACTION_SETS])
        return num_envs

    return step


def batch_sizes(text: str) -> List[int]:
    """`--batch_sizes` as positive ints."""
    try:
        sizes = [int(size) for size in text.split(",")]
    except ValueError:
        raise SystemExit(f"--batch_sizes must be comma-separated ints, got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise SystemExit(f"--batch_sizes must be positive, got {text!r}")
    return sizes


def main() -> None:
    parser = common.make_parser("vectorised_envs", __doc__.splitlines()[0], seconds=2.0, warmup=0.5)
    parser.add_argument("--envs", default=DEFAULT_ENVS, help=f"comma-separated names (default {DEFAULT_ENVS})")
    parser.add_argument("--batch_sizes", default=DEFAULT_BATCH_SIZES,
                        help=f"vectorised batch sizes B (default {DEFAULT_BATCH_SIZES})")
    parser.add_argument("--clock", choices=sorted(common.CLOCKS), default="cpu",
                        help="cpu: steps per second of this process's CPU time (default; steadier on a "
                             "shared machine); wall: per second of wall time")
    args = common.check_args(parser.parse_args())
    sizes = batch_sizes(args.batch_sizes)
    from wrappers.vectorised import vectorised_implementation  # pylint: disable=import-outside-toplevel

    figures: Dict[str, Any] = {}
    rows = []
    for name in args.envs.split(","):
        if vectorised_implementation(name) is None:
            raise SystemExit(f"{name} has no vectorised implementation")
        variants = {"reference bare": reference_bare_stepper(name),
                    "reference wrapped": reference_wrapped_stepper(name),
                    **{f"vectorised B={size}": vectorised_stepper(name, size) for size in sizes}}
        rates = common.measure_interleaved(variants, args.repeats, args.seconds, args.warmup, args.clock)
        medians = {variant: common.median(values) for variant, values in rates.items()}
        wrapped = medians["reference wrapped"]
        figures[name] = {variant: {"env_steps_per_s": rate, "over_reference_wrapped": common.ratio(rate, wrapped),
                                   "runs": rates[variant]}
                         for variant, rate in medians.items()}
        rows.extend((name, variant, common.fmt(rate, 0), common.fmt(common.ratio(rate, wrapped), 1))
                    for variant, rate in medians.items())
    common.print_table(f"Environment steps per second of {args.clock} time (median of {args.repeats}), one process",
                       ["environment", "implementation", "env steps/s", "x reference wrapped"], rows)
    common.emit(args, figures, {"benchmark": "vectorised_envs", "envs": args.envs, "batch_sizes": sizes})


if __name__ == "__main__":
    main()
