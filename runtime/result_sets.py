"""Result sets: the buffers a program's results are computed into, handed out to the caller
in turn, for programs whose peers write into the results (docs/copy_engine.md).

A copy-engine all-reduce whose output is a program result pushes each member's reduced
chunks straight into the other members' outputs: the output is a symmetric buffer, and a
push of run k lands in the buffer the peer uses in run k. So the members cannot each pick
their result buffers alone (as runtime/graphs.py's default mode does for other programs):
they agree on them, here.

- A program has RESULT_SETS sets of result buffers handed out in turn, plus one scratch
  set that is never handed out (its results are copied). A set is free on a rank when the
  caller holds none of its results (no tensor of the caller shares their storage).
- At the end of each run, once its work is enqueued, each member offers which sets are
  free on it (`HostAgreement`: a word per member in shared host memory, which the members
  of a copy-engine team share: the copy engines reach the GPUs of one host); when its next
  run begins it reads the others' offers and all take the lowest set free on every member,
  else the scratch set. Every member decides from the same words, so every member decides
  alike. A set free when a run ends is still free when the next run starts (only a run
  hands a set out), so the offer can be made at the end and read at the start: a run's
  call returns without waiting for a slower member's host, and the next run finds the
  offers made long before (an SPMD program's members end a run within microseconds of each
  other; waiting at the end instead delayed the return of a member that started first by
  the others' start). Three sets, so that a caller that keeps the previous result while it
  runs the next (`y = f(x)` in a loop) leaves one free when a run ends.
- On the device, the program's `hir.allocate symmetric` of the result then releases the
  chosen set to the peers (after the caller's work so far on the current stream, which
  may still read the set's previous results) and acquires it: the peers' pushes of this
  run wait for that (runtime/copy_engine.py).

It costs one host handshake per run, a few microseconds when the ranks' hosts are in step,
as an SPMD program's are, and nothing more where a run begins after the others' previous runs
ended.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from .symmetric_memory import SymmetricHeap, SymmetricMemoryError

RESULT_SETS = 3
"""Sets handed out in turn: when a run ends, a caller that keeps the previous run's results
while it runs the next (`y = f(x)` in a loop) holds two, and the next run takes the third."""

SCRATCH = RESULT_SETS
"""The index of the set whose results are copied before they are handed out."""


def storage_uses(tensors: Sequence[Any]) -> list[int]:
    """How many tensors share each tensor's storage (an alias handed out counts)."""
    return [torch._C._storage_Use_Count(x.untyped_storage()._cdata) if isinstance(x, torch.Tensor) else 0
            for x in tensors]


SPIN_SECONDS = 2e-3
"""How long a member waiting for the others' words reads them without pausing: the members
of an SPMD program reach a run within microseconds of each other, and the shortest pause
the host clock gives is tens of microseconds, which would delay every run."""


class HostAgreement:
    """The members of a team on one host agree once per run on a bit mask: each writes its
    mask into a word of shared host memory (`offer`) and later reads everyone's (`agreed`).

    Each member has two words, used by alternate offers: a member that read every word of
    offer n may write its word of offer n + 1 before the slowest member read its word of
    offer n, but not its word of offer n + 2, which it makes after reading every member's
    word of offer n + 1, which each made after reading offer n."""

    def __init__(self, heap: SymmetricHeap, team: tuple[int, ...], timeout: float):
        words = heap.allocate_on_host(team, (2,), torch.int64)
        self.team = team
        self.position = words.position
        self._words = [words.peer(p).numpy() for p in range(len(team))]
        """Every member's words (numpy views: a read or write is one aligned 64-bit access)."""
        self.timeout = timeout
        self.runs = 0
        """Offers made."""
        self._mask = 0
        """This member's last offer."""

    def offer(self, mask: int) -> None:
        """This member's mask (below 2**32) of the next agreement, for the others to read."""
        self.runs += 1
        self._mask = mask
        self._words[self.position][self.runs % 2] = (self.runs << 32) | mask

    def agreed(self) -> int:
        """The AND of the masks every member offered last (once each has offered it)."""
        agreed = self._mask
        for position in range(len(self.team)):
            if position != self.position:
                agreed &= self._mask_of(position, self.runs % 2)
        return agreed

    def _mask_of(self, position: int, word: int) -> int:
        words, run = self._words[position], self.runs
        start = None  # the clock is read only while the offer is not there (almost always it was made long before)
        pause = 1e-5
        while (value := int(words[word])) >> 32 != run:
            now = time.monotonic()
            start = now if start is None else start
            if now > start + self.timeout:
                raise SymmetricMemoryError(
                    f"timed out after {self.timeout:g} s waiting for rank {self.team[position]} to end run "
                    f"{run} of a program whose peers write into its results (every rank runs it as often)")
            if now > start + SPIN_SECONDS:
                time.sleep(pause)
                pause = min(2 * pause, 1e-3)
        return value & 0xFFFFFFFF


class ResultSets:
    """The result sets of one program on this rank (see the module doc).

    `buffers(k)` makes set k's buffers (None where the results have no static shape: then
    only the scratch set is used, with results computed anew and copied); `use(k)` tells
    the program which set its symmetric results are in. Each run calls `begin_run` before
    its work, `run_into_chosen` (or `hand_out`) with its results and `offer_next` once its
    work is enqueued."""

    def __init__(self, buffers: Callable[[int], list | None], use: Callable[[int], None],
                 agreement: HostAgreement | None):
        self._make = buffers
        self._use = use
        self._agreement = agreement
        self.chosen = SCRATCH
        """The set of the current run."""
        self._next = 0
        """The set of the next run, agreed (at first every set is free on every member)."""
        self._offered: HostAgreement | None = None
        """The agreement this member offered its free sets to since the last run began."""
        self._sets: dict[int, list | None] = {}
        self._handed: dict[int, list] = {}
        """What each set hands out aliases of: its buffers, each on a storage of its own
        (that only this object and the caller's tensors refer to, unlike the buffers, which
        the run's own bookkeeping refers to as well)."""
        self._alone: dict[int, list[int]] = {}
        """The storage uses of `_handed` when the caller holds none of them."""

    def begin_run(self) -> None:
        """This run computes its results into the lowest set free on every member when
        their previous runs ended (collective: waits for the members' offers)."""
        if self._offered is not None:
            self._next = _lowest(self._offered.agreed())
            self._offered = None
        self.chosen = self._next
        self._use(self.chosen)

    def offer_next(self) -> None:
        """Offer the sets free on this member now to the next run (the others read the
        offer when their next run begins)."""
        free = sum(1 << k for k in range(RESULT_SETS) if self._free(k))
        if self._agreement is None:
            self._next = _lowest(free)
        else:
            self._agreement.offer(free)
            self._offered = self._agreement

    def _free(self, k: int) -> bool:
        if self.buffers(k) is None:
            return False
        handed = self._handed.get(k)
        return handed is None or storage_uses(handed) == self._alone[k]

    def buffers(self, k: int) -> list | None:
        """Set k's buffers, one per result (None where this rank holds none); None for the
        scratch set, whose results are computed anew."""
        if k == SCRATCH:
            return None
        if k not in self._sets:
            self._sets[k] = self._make(k)
        return self._sets[k]

    def run_into_chosen(self, run: Callable[[list | None], Sequence[Any]]) -> list:
        """`run(buffers)` computes this run's results into the chosen set's buffers; they
        are handed out."""
        return self.hand_out(self.chosen, run(self.buffers(self.chosen)))

    def hand_out(self, k: int, results: Sequence[Any]) -> list:
        """The results of a run into set k, for the caller: new aliases of the set's
        buffers, or copies of the scratch set's."""
        if k == SCRATCH:
            return [x.clone() if isinstance(x, torch.Tensor) else x for x in results]
        handed = self._handed.get(k)
        if handed is None:
            # DLPack makes a tensor of the same memory on a storage object of its own.
            handed = self._handed[k] = [torch.from_dlpack(x) if isinstance(x, torch.Tensor) else x for x in results]
            self._alone[k] = storage_uses(handed)
        return [x.detach() if isinstance(x, torch.Tensor) else x for x in handed]


def _lowest(sets: int) -> int:
    """The lowest set of a mask, else the scratch set."""
    return (sets & -sets).bit_length() - 1 if sets else SCRATCH
