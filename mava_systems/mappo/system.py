"""MAPPO and IPPO: PPO for every agent, with a centralised or a decentralised critic."""

from typing import Any, Dict, List, Optional

from absl import logging
import tree

from mava_systems.mappo.builder import MAPPOBuilder
from mava_systems.mappo.config import MAPPOConfig
from mava_systems.mappo.networks import (NetworkFactory, mlp_network_factory,
                                         recurrent_network_factory)
from mava_systems.multiagent import MultiAgentSystem


class MAPPO(MultiAgentSystem):
    """Multi-agent PPO: on-policy actor-critic whose critics see the global state (the root of
    the on-policy actor-critic family; IPPO extends it).

    The program is the seed's IMPALA with the multi-agent systems' groups: a
    Reverb queue of sequences in `replay`, `counter`, `coordinator` (with a step
    limit), `trainer`, `evaluator`, `cacher` (with `num_caches` > 0) and
    `executor` nodes reading variables round-robin from the caches (or the
    trainer). Executors sample their policies and write fixed-length sequences
    (each starting at the previous one's last step, its bootstrap); the
    trainer runs PPO epochs on each batch (see `MAPPOTrainer`); the evaluator
    takes each policy's most likely action.

    Agents of one type share a policy and a critic by default, and see their
    one-hot agent ID (`config.agent_ids`). The centralised critic sees the
    environment's `env_state` (or, when it has none, every agent's observation
    concatenated, said once here) followed by its agent's observation.

    Executors explore by sampling their policies; `network_factory(observation_spec,
    action_spec, critic_input_spec)` returns a (policy, critic) pair (see `NetworkFactory`).
    """

    builder_class = MAPPOBuilder
    system_name = "mappo"
    config_class = MAPPOConfig
    # The critic a default config has; IPPO's is decentralised.
    critic = "centralised"

    def __init__(
        self,
        environment_factory: Any,
        network_factory: Optional[NetworkFactory] = None,
        num_executors: int = 1,
        num_caches: int = 0,
        max_executor_steps: Optional[int] = None,
        config: Optional[MAPPOConfig] = None,
        run_dir: Optional[str] = None,
    ):
        """Validates everything and builds the networks once, before any process starts.

        Args:
          environment_factory: `factory(evaluation=False, seed=None)` returning a
            `wrappers.MultiAgentEnvironment` with discrete or continuous actions.
          network_factory: `factory(observation_spec, action_spec, critic_input_spec)`
            returning a (policy, critic) pair (see `NetworkFactory`), both `snt.RNNCore`s
            with `config.recurrent`; None for MLPs with `config.hidden_sizes` (or the
            reference GRU policy and critic with `config.recurrent`).
          num_executors: executor nodes (at least 1); each samples its policies.
          num_caches: variable caches between trainer and executors (0: none).
          max_executor_steps: stop the program after this many executor steps.
          config: hyper-parameters, a `MAPPOConfig` whose `critic` is this class's
            (None: the defaults with this class's critic).
          run_dir: where logs and checkpoints go (default: `runs/<system_name>-<time>`).

        Raises:
          ValueError: on a bad count or config (or one with another critic than
            this class's), or networks that do not fit the environment.
        """
        if config is None:
            config = self.config_class(critic=self.critic)
        elif not isinstance(config, MAPPOConfig):
            raise ValueError(f"{type(self).__name__} needs a MAPPOConfig, got {type(config).__name__}")
        elif type(self) is not MAPPO and config.critic != self.critic:
            raise ValueError(f"{type(self).__name__} has a {self.critic} critic, but the config "
                             f"asks for critic={config.critic!r}")
        super().__init__(environment_factory, network_factory, num_executors, num_caches,
                         max_executor_steps, config, run_dir=run_dir)

    def check_environment(self) -> None:
        """Says once when the centralised critic has no global state to see (it then sees every
        agent's observation)."""
        if self.config.critic == "centralised" and "env_state" not in self.environment_spec.extras:
            logging.warning("%s: the environment has no global state; the centralised critic "
                            "sees the concatenation of all agents' observations",
                            type(self).__name__)

    def make_default_network_factory(self) -> NetworkFactory:
        """MLP policies and critics with `config.hidden_sizes` (see `make_mlp_networks`), or with
        `config.recurrent` the reference recurrent policies (`config.rnn_input_sizes` ReLU input
        layers, a GRU of `rnn_hidden_size` units, a head: see `make_recurrent_networks`) with
        MLP critics, or recurrent critics of the policies' layout with `recurrent_critic`."""
        config = self.config
        if config.recurrent:
            return recurrent_network_factory(
                config.rnn_input_sizes, config.rnn_hidden_size, config.init_log_std,
                critic_hidden_sizes=None if config.recurrent_critic else config.hidden_sizes)
        return mlp_network_factory(config.hidden_sizes, config.init_log_std)

    def replay_item_description(self, table: Any) -> str:
        """Every leaf of the item signature with its path, in sorted order: the signature of a
        table read back from Reverb holds its dicts in an order that varies between processes."""
        return repr(tree.flatten_with_path(table.info.signature))

    def launch_notes(self) -> List[str]:
        """Says when each executor's block of `num_envs_per_executor` sequences makes several
        trainer steps (`batch_size` smaller than the block): the trained-on data is then that
        many times older (policy lag, docs/architecture.md)."""
        notes = super().launch_notes()
        block, batch = self.config.num_envs_per_executor, self.config.batch_size
        if self.writes_batched and batch < block:
            notes.append(
                f"Each executor writes blocks of {block} sequences and a trainer step takes "
                f"{batch}: every block makes {block // batch} trainer steps, and the data "
                f"trained on is a few blocks old (a policy lag of several times {block // batch} "
                "trainer steps); "
                f"--batch_size={block} trains once on each block (the MAPPO paper's "
                "environments x 1 minibatch).")
        return notes

    def executor_log_values(self, executor: Any) -> Dict[str, Any]:
        """Each executor row logs the trainer step of the policy it acted with and, for a
        batched executor, the seconds it has waited on the full queue (`queue_wait_s`)."""
        # With several environments, the version their shared actor acted with.
        values = {"policy_version": getattr(executor, "actor", executor).policy_version}
        if hasattr(executor, "queue_wait_s"):
            values["queue_wait_s"] = executor.queue_wait_s
        return values


class IPPO(MAPPO):
    """Independent PPO: MAPPO whose critics see only their agent's observation."""

    system_name = "ippo"
    critic = "decentralised"
