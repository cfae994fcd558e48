"""R2D2: recurrent replay distributed DQN as a Launchpad program, in the seed's topology."""

import functools
from typing import Any, Dict, Optional

import launchpad as lp

from mava_systems.nodes.cacher import CacherNode
from mava_systems.acting.exploration import default_schedules
from mava_systems.r2d2.builder import R2D2Builder
from mava_systems.r2d2.config import R2D2Config
from mava_systems.r2d2.networks import RecurrentQNetworkFactory, make_recurrent_q_network
from mava_systems.single_agent import SingleAgentSystem


class R2D2(SingleAgentSystem):
    """Recurrent Q-learning from prioritised, burnt-in sequences with stored LSTM states.

    The program is the seed's R2D2: replay; counter (with the coordinator in
    its group when `max_actor_steps` is set); learner; one cache in front of
    the learner; an evaluator reading the cache (the learner when it
    evaluates by steps: a snapshot must hold the learner's variables of its
    step, not a copy seconds old); and one actor per epsilon of
    `np.flip(np.logspace(1, 8, num_actors, base=0.4))`, each reading the cache.
    """

    system_name = "r2d2"
    config_class = R2D2Config
    builder_class = R2D2Builder
    discrete_actions = True

    def __init__(
        self,
        environment_factory: Any,
        network_factory: Optional[RecurrentQNetworkFactory] = None,
        num_actors: int = 1,
        max_actor_steps: Optional[int] = None,
        config: Optional[R2D2Config] = None,
        run_dir: Optional[str] = None,
    ):
        """Validates everything and builds the networks once, before any process starts.

        Args:
          environment_factory: `factory(evaluation=False, seed=None)` returning a
            one-agent `wrappers.MultiAgentEnvironment` with discrete actions, e.g.
            `wrappers.make_environment_factory("gymnasium/CartPole-v1")`.
          network_factory: `factory(observation_spec, action_spec)` returning an
            `snt.RNNCore` Q-network; None for `RecurrentQNetwork` sized by the config.
          num_actors: actor nodes (at least 1), one per epsilon.
          max_actor_steps: stop the program after this many actor steps.
          config: hyper-parameters.
          run_dir: where logs and checkpoints go (default: runs/r2d2-<time>).

        Raises:
          ValueError: on a bad count or config, or an environment without
            exactly one agent with discrete actions.
        """
        super().__init__(environment_factory, network_factory, num_actors, 1, max_actor_steps,
                         config, run_dir)
        self.exploration_schedules = default_schedules(num_actors)

    @staticmethod
    def make_default_network_factory(config: R2D2Config) -> RecurrentQNetworkFactory:
        """`RecurrentQNetwork` with the config's torso and LSTM sizes."""
        return functools.partial(make_recurrent_q_network, hidden_sizes=config.hidden_sizes,
                                 lstm_size=config.lstm_size)

    def description(self) -> Dict[str, Any]:
        """The run's description, with every actor's exploration schedule."""
        return {**super().description(),
                "exploration_schedules": [repr(s) for s in self.exploration_schedules]}

    def executor_options(self, executor_id: int) -> Dict[str, Any]:
        """Actor `executor_id` explores with its own epsilon."""
        return {"exploration_schedule": self.exploration_schedules[executor_id]}

    def build(self, name: Optional[str] = None) -> lp.Program:
        """The seed's R2D2 program (the evaluator reads the cache, not the learner, unless it
        evaluates by steps)."""
        program = lp.Program(name=name or self.system_name)
        with program.group("replay"):
            replay = program.add_node(lp.ReverbNode(self.replay))
        with program.group("counter"):
            counter = program.add_node(lp.CourierNode(self.counter))
            learner_node = lp.CourierNode(self.trainer, replay, counter)
            cacher_node = CacherNode(learner_node.create_handle())
            evaluator_source = learner_node if self.evaluates_by_steps else cacher_node
            evaluator_node = lp.CourierNode(self.evaluator, evaluator_source.create_handle(),
                                            counter)
            if self._max_executor_steps:
                # Added before the nodes it calls, in the seed's order; their handles exist
                # already. It has the evaluator play a final round before stopping the program.
                program.add_node(lp.CourierNode(self.coordinator, counter,
                                                evaluator_node.create_handle()))
        with program.group(self.trainer_group):
            learner = program.add_node(learner_node)
        with program.group("cacher"):
            cacher = program.add_node(cacher_node)
        with program.group("evaluator"):
            program.add_node(evaluator_node)
        source = learner if self.lockstep else cacher  # Lockstep fetches go to the learner.
        with program.group(self.executors_group):
            for executor_id in range(self._num_executors):
                program.add_node(
                    lp.CourierNode(self.executor, executor_id, replay, source, counter))
        return program
