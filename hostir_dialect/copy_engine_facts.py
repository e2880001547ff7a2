"""What the copy-engine transport does for each collective it carries (docs/copy_engine.md).

One table, keyed by op name, so that the `hir` op classes need not know the transport:
the verifier reads which collectives have an algorithm, the `via` buffer each needs and
the inputs each takes; the cost model (passes/cost_model.py) the phases and the bytes
each moves; the runtime (runtime/copy_engine.py) the flag slots a post uses.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CopyEngineAlgorithm:
    """One collective's algorithm on the copy engines."""

    phases: int
    """Rounds of pushes into the peers' memory, each followed by one flag per peer, one
    after the other: the flag slots a post uses."""
    chunked: bool
    """Each peer is sent its own 1/D chunk of the input (reduce-scatter, all-reduce), not
    the whole input (all-gather); the input must split into D equal chunks."""
    via_inputs: int
    """Size of the `via` buffer, in inputs per member (0: no `via` buffer)."""
    reduces: bool
    """Combines D chunks locally into one (a kernel reading D and writing one chunk)."""
    gathers_into_symmetric_output: bool = False
    """Its last phase pushes into the peers' outputs where the output is a view of a
    symmetric buffer, and into the last input's worth of `via` (then copied into the
    output) where it is not."""

    def share_per_peer(self, input_size: float, team_size: int) -> float:
        """What one phase copies to each peer, of an input of `input_size` (elements or
        bytes) per member."""
        return input_size / team_size if self.chunked else input_size

    def sent(self, input_size: float, team_size: int) -> float:
        """What a member sends in all, every phase to every peer."""
        return self.phases * (team_size - 1) * self.share_per_peer(input_size, team_size)

    def reduced(self, input_size: float, team_size: int) -> float:
        """What its local reduction reads and writes (0: none)."""
        return (team_size + 1) * input_size / team_size if self.reduces else 0.0

    def via_inputs_needed(self, team_size: int, symmetric_output: bool = False, onto_product: bool = False) -> int:
        """Size of the `via` buffer, in inputs per member (0: none), on a team of
        `team_size`, for an output that is a view of a symmetric buffer or not, and with the
        own part a product computed onto the received chunks or not."""
        inputs = self.via_inputs
        if symmetric_output and self.gathers_into_symmetric_output:
            inputs -= 1  # the reduced chunks land in the outputs
        if symmetric_output and onto_product and team_size == 2:
            # Each member's lead pushes its chunk straight into that member's output, where
            # the own product adds onto it; on a team of two the lead is the only peer.
            inputs -= 1
        return inputs

    def input_problem(self, input_elements: int, team_size: int) -> str | None:
        """Why it cannot take an input of this many elements per member (None if it can)."""
        if self.chunked and input_elements % team_size:
            return f"its input of {input_elements} elements per member does not split into {team_size} equal chunks"
        return None


ALGORITHMS: dict[str, CopyEngineAlgorithm] = {
    # Every member's input into its slot of every member's output.
    "hir.allgather": CopyEngineAlgorithm(phases=1, chunked=False, via_inputs=0, reduces=False),
    # Chunk p into member p's `via`; the wait reduces the own chunk and the received ones.
    "hir.reduce_scatter": CopyEngineAlgorithm(phases=1, chunked=True, via_inputs=1, reduces=True),
    # A reduce-scatter into the first half of `via`, then an all-gather of the reduced
    # chunks into its second half, or into the output where that is symmetric.
    "hir.allreduce": CopyEngineAlgorithm(phases=2, chunked=True, via_inputs=2, reduces=True,
                                         gathers_into_symmetric_output=True),
}


def copy_engine_algorithm(name: str) -> CopyEngineAlgorithm | None:
    """The copy-engine algorithm of the collective op named `name` (None: it has none)."""
    return ALGORITHMS.get(name)
