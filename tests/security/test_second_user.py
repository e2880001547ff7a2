"""Another local user against a running launch (docs/security.md): while two CPU ranks
meet, set up symmetric memory and compute, a process of user nobody (uid 65534) is
given every name it could want (the rendezvous store, the shared-memory files, the ranks'
listening ports) and tries to read or join the run; it is refused, and the run still
computes the right result. The test drops privileges, so it needs root (skipped
otherwise); the process it drops is its own Python, started as root, which lets it
import what it needs before it becomes nobody.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from hostir.runtime.launcher import launch
from hostir.runtime.symmetric_memory import SymmetricHeap, peer_view

NOBODY = 65534

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="dropping to another user (uid 65534) needs root")


# --------------------------------------------------------------------------- #
# The ranks
# --------------------------------------------------------------------------- #


def default_store_path() -> str | None:
    """The file of the world's store (None: a store of no file, such as a TCP store)."""
    store = dist.distributed_c10d._get_default_store()
    while hasattr(store, "underlying_store"):  # a PrefixStore around the launcher's FileStore
        store = store.underlying_store
    return getattr(store, "path", None)


def rank_under_attack(rank: int, world_size: int, exchange: str) -> list[list[float]]:
    """Exchange ranks through symmetric memory; rank 0 stops while the shared files exist
    (the other ranks wait for it in the barrier after mapping), hands their names to the
    test, and goes on once the other user has tried them."""
    from_file = torch.from_file
    paused = []

    def pause_once(path, *args, **kwargs):
        if rank == 0 and not paused:
            paused.append(path)
            names = {"store": default_store_path(), "shared": [str(p) for p in Path(path).parent.iterdir()],
                     "pids": [int(p.read_text()) for p in sorted(Path(exchange).glob("pid.*"))]}
            (Path(exchange) / "names.json").write_text(json.dumps(names))
            deadline = time.monotonic() + 120
            while not (Path(exchange) / "tried").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        return from_file(path, *args, **kwargs)

    (Path(exchange) / f"pid.{rank}").write_text(str(os.getpid()))
    dist.barrier()  # every rank's pid is written
    torch.from_file = pause_once  # in this rank only, which exits after
    heap = SymmetricHeap(rank, torch.device("cpu"), lambda team: dist.group.WORLD, timeout=120)
    team = tuple(range(world_size))
    buffer = heap.allocate(team, (world_size, 3), torch.float32)
    for position in range(world_size):
        peer_view(buffer, buffer.local[rank], position).fill_(float(rank))
    dist.barrier()
    total = torch.tensor([float(rank + 1)])
    dist.all_reduce(total)
    return [*buffer.local.tolist(), total.tolist()]


# --------------------------------------------------------------------------- #
# The other user
# --------------------------------------------------------------------------- #

NOBODY_TRIES = r"""
import encodings.idna, json, os, socket, sys, time
os.setgroups([]); os.setgid(65534); os.setuid(65534)
names, ports = json.loads(sys.argv[1]), json.loads(sys.argv[2])
tried = {}

def attempt(what, action):
    try:
        action()
        tried[what] = "allowed"
    except OSError as error:
        tried[what] = type(error).__name__

store = names["store"] or "(no store file)"
attempt("read the store", lambda: open(store, "rb").read())
attempt("write the store", lambda: open(store, "ab").write(b"x"))
attempt("list the store's directory", lambda: os.listdir(os.path.dirname(store)))
attempt("list the shared files' directory", lambda: os.listdir(os.path.dirname(names["shared"][0])))
for index, path in enumerate(names["shared"]):
    attempt(f"read shared file {index}", lambda: open(path, "rb").read(1))
    attempt(f"write shared file {index}", lambda: open(path, "r+b").write(b"x"))
# The ranks' own sockets: connect to each and send it every small sequence number, as
# gloo's listener reads one to hand the socket to a pair; keep them open past the run.
held = []
for port in ports:
    for seq in range(64):
        try:
            connection = socket.create_connection(("127.0.0.1", port), timeout=2)
            connection.sendall(seq.to_bytes(8, "little"))
            held.append(connection)
        except OSError:
            pass
tried["connections held"] = len(held)
print(json.dumps(tried), flush=True)
time.sleep(5)
"""


def listening_sockets(pids: list[int]) -> list[tuple[str, int]]:
    """(address in /proc/net hex, port) of every TCP socket the processes listen on."""
    inodes = set()
    for pid in pids:
        for fd in glob.glob(f"/proc/{pid}/fd/*"):
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[len("socket:["):-1])
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # state LISTEN
                address, port = fields[1].split(":")
                found.append((address, int(port, 16)))
    return found


IPV4_LOOPBACK = "0100007F"  # 127.0.0.1 as /proc/net/tcp writes it
IPV6_LOOPBACK = "00000000000000000000000001000000"  # ::1


def the_other_user(exchange: Path, report: dict) -> None:
    """Once the ranks are paused with their files open: what the other user could do."""
    names_file = exchange / "names.json"
    deadline = time.monotonic() + 120
    while not names_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        names = json.loads(names_file.read_text())
        report["listening"] = listening_sockets(names["pids"])
        ports = [port for _, port in report["listening"]]
        tries = subprocess.Popen([sys.executable, "-c", NOBODY_TRIES, json.dumps(names), json.dumps(ports)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        report["tried"] = json.loads(tries.stdout.readline() or "{}")
        report["process"] = tries
    finally:
        (exchange / "tried").write_text("")


def test_another_user_can_neither_read_nor_join_a_run(tmp_path):
    report: dict = {}
    other = threading.Thread(target=the_other_user, args=(tmp_path, report), daemon=True)
    other.start()
    results = launch(rank_under_attack, 2, (str(tmp_path),), backend="gloo", timeout=240, collective_timeout=180)
    other.join(timeout=60)
    process = report.get("process")
    if process is not None:
        stderr = process.communicate(timeout=60)[1]
        assert process.returncode == 0, stderr
    tried = report["tried"]
    # Nothing of the run can be read or written: the store and the shared files live in
    # directories only the run's user may enter (before the fix: a TCP store on every
    # interface, and 0644 files in /dev/shm).
    refused = {what: outcome for what, outcome in tried.items() if what != "connections held"}
    assert len(refused) == 8 and set(refused.values()) == {"PermissionError"}, tried
    # The ranks listen on the loopback interface only.
    assert report["listening"] and all(address in (IPV4_LOOPBACK, IPV6_LOOPBACK)
                                       for address, _ in report["listening"]), report["listening"]
    # Connections to those sockets, with any small sequence number, did not disturb the
    # run: every rank holds every rank's row, and the sum of ranks + 1.
    assert tried["connections held"] > 0
    assert results == [[[0.0] * 3, [1.0] * 3, [3.0]]] * 2
