"""MAPPO's executor for the B environments of a batched environment, in arrays throughout.

`BatchedMAPPOExecutor` is what a `MultiEnvironmentExecutor` of B MAPPO streams
writing to one `BatchedSequenceWriter` is, without the split into environments:
the batched environment's arrays are sliced per network (agents side by side,
environments first), go to the actor's one policy call, and every step
appends one block of rows (leaves `[B, ...]`) to the writer
(`BatchedSequenceWriter.append_block`). Recurrent agents' policy and critic
states are kept as `[B, agents, ...]` arrays, reset for the environments whose
episode starts. It drives `acting.unsplit_loop.UnsplitEnvironmentLoop` and
writes the blocks the streams' lanes would (see `data/batched_sequences.py`):
an environment's episode end makes its final observation's row (zeros beside it)
at the batched reset step that follows.
"""

from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np
import tree

from mava_systems.acting.batched_acting import BatchedActing, masked, rows
from mava_systems.acting.unsplit_loop import FIRST
from mava_systems.data.batched_sequences import BatchedSequenceWriter
from mava_systems.mappo.execution import (AGENTS, CRITIC_STATE, POLICY_STATE, MAPPOExecutor,
                                          RecurrentMAPPOExecutor)


class BatchedMAPPOExecutor(BatchedActing):
    """Acts for B environments in one policy call and writes their steps as blocks (see the
    module's docstring).

    `actor` is a `MAPPOExecutor` (or `RecurrentMAPPOExecutor`) made with the B
    environments' seeds (its policy draws each environment's numbers from its own
    generator) and no adder; `writer` gets the blocks (None: nothing is written).
    """

    def __init__(self, actor: MAPPOExecutor, writer: Optional[BatchedSequenceWriter],
                 agents: Sequence[str], num_envs: int, stores_state: bool,
                 centralised: bool = False):
        """`agents` are the batched environment's, in the order of its agent axis;
        `stores_state`: replay stores the environment's global state with each observation;
        `centralised`: recurrent critics see the global state."""
        super().__init__(actor, agents, num_envs)
        self._writer = writer
        self._stores_state = stores_state
        self._centralised = centralised
        self._recurrent = isinstance(actor, RecurrentMAPPOExecutor)
        self._pending: Tuple[Any, np.ndarray] = ({}, np.zeros(0, bool))  # Its rows' observation.
        self._chosen: Tuple[Dict[str, Any], Dict[str, Any], int] = ({}, {}, 0)
        self._steps_critics = self._recurrent and actor.steps_critics
        if self._recurrent:
            self._policy_states = self._tiled(actor.initial_states())
        if self._steps_critics:
            self._critic_states = self._tiled(actor.initial_critic_states())

    @property
    def queue_wait_s(self) -> float:
        """Seconds its writer has waited for replay to take its items (a full queue)."""
        return 0.0 if self._writer is None else self._writer.wait_s

    def select_actions(self, batched: Any) -> np.ndarray:
        """Every environment's agents' actions ([B, agents]) from one policy call on the last
        observed step (`batched`, whose observations `observe` sliced)."""
        del batched  # Sliced by `observe`.
        policy_rows = self._policy_rows()
        self.actor.num_steps = self.num_steps
        if self._recurrent:
            outputs, new_states = self.actor.policy_outputs(
                policy_rows, self.actor.epsilon, tree.map_structure(rows, self._policy_states))
            self._policy_states = self._advanced(self._policy_states, new_states)
        else:
            outputs = self.actor.policy_outputs(policy_rows, self.actor.epsilon)
        num_envs = self.num_environments
        chosen = {key: np.asarray(action).reshape(num_envs, -1)
                  for key, (action, _) in outputs.items()}
        log_probs = {key: np.asarray(log_prob).reshape(num_envs, -1)
                     for key, (_, log_prob) in outputs.items()}
        self._chosen = (chosen, log_probs, self.actor.policy_version)
        return self._agent_actions(chosen)

    def observe(self, actions: Optional[np.ndarray], batched: Any, stepped: np.ndarray,
                starting: np.ndarray, write: bool) -> None:
        """Writes the step's block (with `write`), counts the `stepped` environments' steps and
        keeps `batched`'s observations, the `starting` environments' states reset."""
        del actions  # `select_actions` kept them, with their log-probabilities.
        if write and self._writer is not None:
            self._writer.append_block(self._block(batched))
        self._steps += stepped
        observation = {AGENTS: self._slice(batched)}
        if self._stores_state:
            observation["env_state"] = batched.state
        if self._recurrent:
            if starting.any():
                self._policy_states = self._reset(self._policy_states, starting,
                                                  self.actor.initial_states())
            observation[POLICY_STATE] = self._policy_states
        if self._steps_critics:
            if starting.any():
                self._critic_states = self._reset(self._critic_states, starting,
                                                  self.actor.initial_critic_states())
            observation[CRITIC_STATE] = self._critic_states
            if self._writer is not None:
                self._advance_critics(batched, bool(starting.any()))
        self._pending = (observation, batched.step_type == FIRST)

    def _block(self, batched: Any) -> Dict[str, Any]:
        """The rows of the step that led to `batched`: the previous observation with the actions
        chosen there, their reward, discount and extras; an environment restarting at `batched`
        gets its previous (final) observation with zeros."""
        keep = batched.step_type != FIRST
        chosen, log_probs, version = self._chosen
        observation, start = self._pending

        def per_network(values: np.ndarray) -> Dict[str, np.ndarray]:
            return {key: masked(keep, part) for key, part in self._per_network(values).items()}

        return dict(
            observation=observation, start_of_episode=start,
            action={key: masked(keep, values) for key, values in chosen.items()},
            reward=per_network(batched.reward), discount=per_network(batched.discount),
            extras={"log_prob": {key: masked(keep, values) for key, values in log_probs.items()},
                    "policy_version": masked(keep, np.full(len(keep), version, np.int64))})

    def _advance_critics(self, batched: Any, new_episode: bool) -> None:
        """Steps every critic on what it sees at `batched`'s observations (as each stream of
        `RecurrentMAPPOExecutor` does for its environment)."""
        num_envs = self.num_environments
        global_state = None
        if self._centralised:
            if self._stores_state:
                global_state = np.asarray(batched.state, np.float32).reshape(num_envs, -1)
            else:  # Every agent's observation, networks in sorted order.
                global_state = np.concatenate([
                    np.asarray(self._stacked[key].observation, np.float32).reshape(num_envs, -1)
                    for key in sorted(self._stacked)], axis=-1)
        inputs = {}
        for key, observation in self._stacked.items():
            own = np.asarray(observation.observation, np.float32).reshape(
                num_envs, len(self._columns[key]), -1)
            if global_state is not None:
                state = np.broadcast_to(global_state[:, None],
                                        (num_envs, own.shape[1], global_state.shape[-1]))
                own = np.concatenate([state, own], axis=-1)
            inputs[key] = rows(own)
        new_states = self.actor.stepped_critic_states(
            inputs, tree.map_structure(rows, self._critic_states), new_episode)
        self._critic_states = self._advanced(self._critic_states, new_states)
