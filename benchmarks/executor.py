"""Executor benchmark: joint environment steps per second on mpe/simple_spread_v3.

    .venv/bin/python -m benchmarks.executor [--repeats 3 --seconds 10]
    .venv/bin/python benchmarks/executor.py [...]   (the same)

Every variant plays whole episodes (reset included) in one thread:

  bare_env            the PettingZoo parallel env itself, random actions from its action spaces
  wrapped_env         our ParallelEnvWrapper, the same random actions
  loop_random         (diagnostic) EnvironmentLoop over the wrapped env with a random executor
  executor            EnvironmentLoop + MADQNExecutor (policy network, epsilon-greedy), no replay
  executor_replay     the same with the Reverb n-step adder writing to a live replay server
  executor_replay_logging  (diagnostic) the same plus the executor node's logger (CSV, TensorBoard)
  executor_replay_<system>  (d) with the executor and adder of VDN and QMIX (`--systems`; also
                   e.g. mappo, maddpg, mad4pg), each writing to its own replay server (QMIX's
                   items also carry the global state; MADDPG and MAD4PG run on simple_spread
                   with continuous actions)
  executor_replay_envs_<N>  (d) with N environments per executor (`--num_envs`, e.g. 2,4,8,16):
                   one batched policy call for all N, one adder stream each, as
                   `num_envs_per_executor=N` runs it; counted in environment steps (also
                   executor_replay_<system>_envs_<N> for each of `--systems`, and
                   executor_replay_recurrent_<system>_envs_<N> for each of `--recurrent`)
  executor_replay_vectorised_<N>  (d) with N environments per executor as one vectorised
                   environment (`--vectorised`, with `--num_envs`): one policy call and one
                   batched step for all N (`VectorisedEnvironmentLoop`, issue 45), one adder
                   stream each (also executor_replay_<system>_vectorised_<N>)
  executor_replay_<system>_batched_<N>  (d) the same, the N environments written as one replay
                   stream (`--batched`, MADQN and each of --systems whose builder
                   `writes_batched`: MAPPO's one append per batched step, items of N sequences;
                   MADQN's, VDN's, QMIX's adders sharing one writer; its own replay server)
  executor_replay_<system>_unsplit_<N>  (d) the same written as one stream by a loop that never
                   splits the batch (`UnsplitEnvironmentLoop`: arrays from the environment to
                   one policy call and one block of rows per step; MAPPO/IPPO, with --batched;
                   `--batched_env` sets the environment of both)
  executor_replay_recurrent_<system>  (d) with the recurrent executor and sequence adder of
                   MADQN, VDN, QMIX, MAPPO or IPPO (`--recurrent`, config recurrent=True: the
                   reference GRU agent, or policy and critic), as a ratio of the same system's
                   feedforward row

Each is reported as a ratio of bare_env; the systems' rows also as a ratio of (d), MADQN's.
"""

import gc
import os
import sys
from typing import Any, Callable, Dict, Optional

if __package__ in (None, ""):  # Run as a file (python benchmarks/<name>.py): find the package.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import common  # noqa: E402

VARIANTS = {
    "bare_env": "(a) bare PettingZoo env, random actions",
    "wrapped_env": "(b) wrapped env, random actions",
    "loop_random": "    EnvironmentLoop, random actions",
    "executor": "(c) executor, no replay",
    "executor_replay": "(d) executor + Reverb adder",
    "executor_replay_logging": "    (d) + node logger (CSV, TensorBoard)",
}
SYSTEM_VARIANT = "executor_replay_{}"
RECURRENT_VARIANT = "executor_replay_recurrent_{}"
ENVS_VARIANT = "executor_replay_envs_{}"
VECTORISED_VARIANT = "executor_replay_vectorised_{}"
# Iterations (a step of every environment) per timed call of a several-environment variant.
ENVS_ITERATIONS = 25
DIAGNOSTIC = ("loop_random", "executor_replay_logging")


def system_prefix(name: str) -> str:
    """The variant name of a system's executor with replay: (d) for MADQN's."""
    return "executor_replay" if name == "madqn" else SYSTEM_VARIANT.format(name)


def sample_actions(spaces: Dict[str, Any]) -> Dict[str, Any]:
    """One random action per agent, from its gymnasium action space."""
    return {agent: space.sample() for agent, space in spaces.items()}


def action_spaces(env: Any, seed: int) -> Dict[str, Any]:
    """The seeded action space of every agent of a PettingZoo env."""
    spaces = {}
    for index, agent in enumerate(env.possible_agents):
        spaces[agent] = env.action_space(agent)
        spaces[agent].seed(seed + index)
    return spaces


def bare_env_episode(seed: int) -> Callable[[], int]:
    """(a) An episode of the PettingZoo env with random actions; returns its length."""
    from mpe2 import simple_spread_v3

    env = simple_spread_v3.parallel_env()
    env.reset(seed=seed)
    spaces = action_spaces(env, seed)

    def episode() -> int:
        env.reset()
        steps = 0
        while env.agents:
            env.step({agent: spaces[agent].sample() for agent in env.agents})
            steps += 1
        return steps

    return episode


def wrapped_env_episode(factory: Any, seed: int) -> Callable[[], int]:
    """(b) An episode of the wrapped env with the same random actions."""
    env = factory(evaluation=False, seed=seed)
    spaces = action_spaces(env.environment, seed)

    def episode() -> int:
        timestep = env.reset()
        steps = 0
        while not timestep.last():
            timestep = env.step(sample_actions(spaces))
            steps += 1
        return steps

    return episode


def loop_episode(loop: Any) -> Callable[[], int]:
    """An episode of an EnvironmentLoop; returns its length."""
    return lambda: int(loop.run_episode()["episode_length"])


def main() -> None:
    parser = common.make_parser(
        "executor", __doc__.split("\n\n")[0], seconds=10.0,
        seconds_help="seconds timed per variant and repeat", warmup=2.0, in_process=True)
    parser.add_argument("--epsilon", type=float, default=0.4,
                        help="the executors' exploration rate (default 0.4, a single "
                             "executor's default)")
    parser.add_argument("--no_diagnostics", action="store_true",
                        help=f"skip the diagnostic variants {', '.join(DIAGNOSTIC)}")
    parser.add_argument("--systems", default="vdn,qmix",
                        help="registered systems whose executor with replay is timed beside "
                             "MADQN's (comma-separated, e.g. vdn,qmix,mappo,maddpg; empty: "
                             "none)")
    parser.add_argument("--recurrent", default="madqn,qmix",
                        help="systems (of madqn, vdn, qmix, mappo, ippo) whose recurrent executor with "
                             "replay is timed too (comma-separated; empty: none)")
    parser.add_argument("--num_envs", default="",
                        help="environments per executor (comma-separated, e.g. 2,4,8,16) timed "
                             "with MADQN's executor and replay beside (d), and with each of "
                             "--systems and --recurrent; empty: none")
    parser.add_argument("--vectorised", action="store_true",
                        help="also time each --num_envs count as one vectorised environment "
                             "(wrappers.vectorised), with MADQN's executor and each of --systems")
    parser.add_argument("--batched", action="store_true",
                        help="with --vectorised, also time the vectorised executors of MADQN "
                             "and --systems whose builder writes batched writing one replay "
                             "stream for all environments")
    parser.add_argument("--batched_env", default=None,
                        help="with --batched, the environment id of the batched and unsplit "
                             "variants (default: the benchmark's mpe/simple_spread_v3), e.g. "
                             "lbf/Foraging-8x8-2p-2f-coop-v3")
    parser.add_argument("--seed", type=int, default=1)
    args = common.check_args(parser.parse_args())
    common.prepare_in_process(args.tf_threads)

    from acme.utils import counting

    from mava_systems.acting.environment_loop import EnvironmentLoop
    from mava_systems.acting.random_policy import RandomExecutor
    from mava_systems.runs.logging import make_logger

    # Nothing samples here, so a samples-per-insert limiter would block inserts: none is set.
    system, server, client = common.local_madqn("executor", seed=args.seed)
    factory, run_dir, config = system.environment_factory, system.run_dir, system.config
    other_systems = {name: common.local_madqn("executor", name, seed=args.seed)
                     for name in common.system_names(args.systems)}

    recurrent_systems = {name: common.local_madqn("executor", name, seed=args.seed, recurrent=True)
                         for name in common.system_names(args.recurrent)}

    acting: Dict[str, str] = {}  # Per system, how its executor acts (NumPy or TensorFlow).

    def make_executor_loop(with_replay: bool, with_logging: bool = False,
                           system: Any = system, client: Any = client) -> Callable[[], int]:
        executor = common.acting_executor(
            system, args.epsilon, adder=system.builder.make_adder(client) if with_replay else None,
            seed=args.seed)
        acting[system.system_name + (" recurrent" if getattr(
            system.config, "recurrent", False) else "")] = ("NumPy" if getattr(executor, "acts_in_numpy", False)
                                      else "TensorFlow")
        # The system's own factory: it may add agent IDs to the observations (MAPPO's does).
        environment = system.environment_factory(evaluation=False, seed=args.seed)
        if not with_logging:
            return loop_episode(EnvironmentLoop(environment, executor))
        logger = make_logger(run_dir, "executor_0", config.terminal_log_interval_s,
                             "executor_steps")
        return loop_episode(EnvironmentLoop(environment, executor, counting.Counter(),
                                            logger, extra_log_fn=lambda: {"epsilon": executor.epsilon}))

    from mava_systems.acting.multi_environment import (MultiEnvironmentLoop,
                                                       environment_seeds)
    from mava_systems.acting.vectorised_loop import VectorisedEnvironmentLoop

    def make_multi_environment_loop(num_envs: int, system: Any = system, client: Any = client,
                                    vectorised: bool = False,
                                    batched: bool = False) -> Callable[[], int]:
        seeds = environment_seeds(args.seed, 0, num_envs, 0, 1)
        executor = system.multi_environment_executor(
            system.builder.make_networks(), common.exploration_arguments(system, args.epsilon),
            client, None, seeds, batched=batched)
        if vectorised:
            loop = VectorisedEnvironmentLoop(system.vectorised_environment(num_envs), executor,
                                             seeds)
            loop.run(num_steps=1)  # Resets the environments; `step` continues them.
        else:
            loop = MultiEnvironmentLoop(
                [system.environment_factory(evaluation=False, seed=seed) for seed in seeds],
                executor)
        return lambda: sum(loop.step() for _ in range(ENVS_ITERATIONS))

    from mava_systems.acting.unsplit_loop import UnsplitEnvironmentLoop

    def make_unsplit_loop(num_envs: int, system: Any, client: Any) -> Optional[Callable[[], int]]:
        """The vectorised loop that never splits the batch, where `system`'s family has one."""
        seeds = environment_seeds(args.seed, 0, num_envs, 0, 1)
        environment = system.vectorised_environment(num_envs)
        executor = system.batched_executor(
            system.builder.make_networks(), common.exploration_arguments(system, args.epsilon),
            client, None, seeds, environment.agents)
        if executor is None:
            return None
        loop = UnsplitEnvironmentLoop(environment, executor, seeds)
        loop.run(num_steps=1)
        return lambda: sum(loop.step() for _ in range(ENVS_ITERATIONS))

    random_env = factory(evaluation=False, seed=args.seed)
    variants: Dict[str, Callable[[], int]] = {
        "bare_env": bare_env_episode(args.seed),
        "wrapped_env": wrapped_env_episode(factory, args.seed),
        "loop_random": loop_episode(EnvironmentLoop(
            random_env, RandomExecutor(random_env.action_spec(), args.seed))),
        "executor": make_executor_loop(with_replay=False),
        "executor_replay": make_executor_loop(with_replay=True),
        "executor_replay_logging": make_executor_loop(with_replay=True, with_logging=True),
    }
    for name, (other, _, other_client) in other_systems.items():
        variants[SYSTEM_VARIANT.format(name)] = make_executor_loop(
            with_replay=True, system=other, client=other_client)
    for name, (other, _, other_client) in recurrent_systems.items():
        variants[RECURRENT_VARIANT.format(name)] = make_executor_loop(
            with_replay=True, system=other, client=other_client)
    num_envs = [int(value) for value in args.num_envs.split(",") if value.strip()]
    batched_systems: Dict[Any, Any] = {}  # (name, count): (system, server, client).
    unsplit_systems: Dict[Any, Any] = {}  # The same, of the unsplit variants.
    for count in num_envs:
        variants[ENVS_VARIANT.format(count)] = make_multi_environment_loop(count)
        for variant, systems in ((SYSTEM_VARIANT, other_systems),
                                 (RECURRENT_VARIANT, recurrent_systems)):
            for name, (other, _, other_client) in systems.items():
                variants[f"{variant.format(name)}_envs_{count}"] = (
                    make_multi_environment_loop(count, other, other_client))
        if args.vectorised:
            variants[VECTORISED_VARIANT.format(count)] = make_multi_environment_loop(
                count, vectorised=True)
            for name, (other, _, other_client) in other_systems.items():
                variants[f"{SYSTEM_VARIANT.format(name)}_vectorised_{count}"] = (
                    make_multi_environment_loop(count, other, other_client, vectorised=True))
            for name, other in [("madqn", system)] + [
                    (name, other) for name, (other, _, _) in other_systems.items()]:
                if args.batched and other.builder.writes_batched:
                    # Its replay may hold blocks of `count` sequences: a system (and server) of
                    # its own, stepping `count` vectorised environments per executor.
                    batched_systems[(name, count)] = common.local_madqn(
                        "executor", name, seed=args.seed, num_envs_per_executor=count,
                        env=args.batched_env)
                    batched, _, batched_client = batched_systems[(name, count)]
                    variants[f"{system_prefix(name)}_batched_{count}"] = (
                        make_multi_environment_loop(count, batched, batched_client,
                                                    vectorised=True, batched=True))
                    unsplit = common.local_madqn(
                        "executor", name, seed=args.seed, num_envs_per_executor=count,
                        env=args.batched_env)
                    loop = make_unsplit_loop(count, *unsplit[::2])
                    if loop is None:
                        common.stop_local([unsplit])
                    else:
                        unsplit_systems[(name, count)] = unsplit
                        variants[f"{system_prefix(name)}_unsplit_{count}"] = loop
    if args.no_diagnostics:
        for name in DIAGNOSTIC:
            variants.pop(name)

    common.progress(f"timing {len(variants)} variants x {args.repeats} repeats x "
                    f"{args.seconds:g} s (+{args.warmup:g} s warm-up each)")
    try:
        rates = common.measure_interleaved(variants, args.repeats, args.seconds, args.warmup,
                                             args.clock)
        replay_items = client.server_info()[next(iter(client.server_info()))].current_size
    finally:
        variants.clear()
        gc.collect()  # Closes the adders' streams before the server stops (else it waits ~5 s).
        common.stop_local([(system, server, client), *other_systems.values(),
                           *recurrent_systems.values(), *batched_systems.values(),
                           *unsplit_systems.values()])

    medians = {name: common.median(values) for name, values in rates.items()}
    bare = medians["bare_env"]
    labels = {**VARIANTS, **{SYSTEM_VARIANT.format(name): f"(d) with {name.upper()}'s executor"
                             f" ({acting[other_systems[name][0].system_name]} acting)"
                             for name in other_systems},
              **{RECURRENT_VARIANT.format(name): f"(d) with {name.upper()}'s recurrent executor"
                 f" ({acting[name + ' recurrent']} acting)" for name in recurrent_systems},
              **{ENVS_VARIANT.format(count): f"(d) with {count} environments per executor"
                 for count in num_envs},
              **{f"{SYSTEM_VARIANT.format(name)}_envs_{count}":
                 f"(d) with {name.upper()}'s executor, {count} environments per executor"
                 for name in other_systems for count in num_envs},
              **{VECTORISED_VARIANT.format(count): f"(d) with {count} vectorised environments"
                 for count in num_envs},
              **{f"{SYSTEM_VARIANT.format(name)}_vectorised_{count}":
                 f"(d) with {name.upper()}'s executor, {count} vectorised environments"
                 for name in other_systems for count in num_envs},
              **{f"{system_prefix(name)}_batched_{count}":
                 f"(d) with {name.upper()}'s executor, {count} vectorised environments, "
                 "one batched stream" for name, count in batched_systems},
              **{f"{system_prefix(name)}_unsplit_{count}":
                 f"(d) with {name.upper()}'s executor, {count} vectorised environments, "
                 "never split" for name, count in unsplit_systems},
              **{f"{RECURRENT_VARIANT.format(name)}_envs_{count}":
                 f"(d) with {name.upper()}'s recurrent executor, {count} environments per executor"
                 for name in recurrent_systems for count in num_envs}}
    rows = [(labels[name], common.fmt(medians[name]), common.fmt(common.ratio(medians[name], bare), 3),
             " ".join(common.fmt(value, 0) for value in rates[name]))
            for name in rates]
    common.print_table(
        f"Executor: joint steps/s on {common.ENV_NAME} (median of {args.repeats} x "
        f"{args.seconds:g} s; replay held {replay_items:,} items at the end)",
        ["variant", "steps/s", "ratio to (a)", "runs"], rows)
    target = 1000.0
    replay_sps = medians["executor_replay"]
    print(f"Target: executor with replay >= {target:,.0f} steps/s: "
          f"{'met' if replay_sps and replay_sps >= target else 'NOT met'} ({common.fmt(replay_sps)})")

    for name in other_systems:
        system_ratio = common.ratio(medians[SYSTEM_VARIANT.format(name)], replay_sps)
        print(f"Target: {name.upper()} executor with replay within 10% of MADQN's: "
              f"{'met' if system_ratio and system_ratio >= 0.9 else 'NOT met'} "
              f"({common.fmt(system_ratio, 3)} of MADQN's)")

    for name in recurrent_systems:
        feedforward = "executor_replay" if name == "madqn" else SYSTEM_VARIANT.format(name)
        recurrent_ratio = common.ratio(medians[RECURRENT_VARIANT.format(name)],
                                       medians.get(feedforward))
        print(f"Target: {name.upper()} recurrent executor with replay within 70% of its "
              f"feedforward one: {'met' if recurrent_ratio and recurrent_ratio >= 0.7 else 'NOT met'}"
              f" ({common.fmt(recurrent_ratio, 3)})")

    for count in num_envs:
        print(f"{count} environments per executor: "
              f"{common.fmt(common.ratio(medians[ENVS_VARIANT.format(count)], replay_sps), 3)} "
              "x the steps/s of (d), one environment")
        for variant, systems, kind in ((SYSTEM_VARIANT, other_systems, ""),
                                       (RECURRENT_VARIANT, recurrent_systems, " recurrent")):
            for name in systems:
                single = medians[variant.format(name)]
                several = medians[f"{variant.format(name)}_envs_{count}"]
                print(f"{name.upper()}{kind}, {count} environments per executor: "
                      f"{common.fmt(common.ratio(several, single), 3)} x its one-environment "
                      "steps/s")
        if args.vectorised:
            for name in ["madqn", *other_systems]:
                prefix = "executor_replay" if name == "madqn" else SYSTEM_VARIANT.format(name)
                speedup = common.ratio(medians[f"{prefix}_vectorised_{count}"],
                                       medians[f"{prefix}_envs_{count}"])
                print(f"{name.upper()}, {count} vectorised environments: "
                      f"{common.fmt(speedup, 3)} x the steps/s of {count} reference environments")
                if (name, count) in batched_systems:
                    gain = common.ratio(medians[f"{prefix}_batched_{count}"],
                                        medians[f"{prefix}_vectorised_{count}"])
                    print(f"{name.upper()}, {count} vectorised environments written as one "
                          f"stream: {common.fmt(gain, 3)} x the steps/s of one stream each")
                if (name, count) in unsplit_systems:
                    gain = common.ratio(medians[f"{prefix}_unsplit_{count}"],
                                        medians[f"{prefix}_batched_{count}"])
                    print(f"{name.upper()}, {count} vectorised environments never split: "
                          f"{common.fmt(gain, 3)} x the steps/s of the split batched loop")

    figures: Dict[str, Any] = {f"{name}_sps": medians[name] for name in rates}
    figures.update({f"{name}_ratio": common.ratio(medians[name], bare)
                    for name in rates if name != "bare_env"})
    figures.update({f"{SYSTEM_VARIANT.format(name)}_ratio_to_madqn":
                    common.ratio(medians[SYSTEM_VARIANT.format(name)], replay_sps)
                    for name in other_systems})
    figures["runs"] = {f"{name}_sps": values for name, values in rates.items()}
    common.emit(args, figures, {"benchmark": "executor", "env": common.ENV_NAME,
                                "epsilon": args.epsilon, "unit": "joint environment steps/s",
                                "acting": acting})


if __name__ == "__main__":
    main()
