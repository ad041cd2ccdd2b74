"""Where a sweep's points run: a local pool of worker processes, or a Ray cluster.

Both take a list of :class:`~fabricsim.point.Task` and report each as it ends through
``done(index, status, payload)`` (see :func:`fabricsim.point.run_task`), in whatever order
the points finish; the sweep puts the rows back in point order.

The local pool is our own rather than ``concurrent.futures`` or ``multiprocessing``:
- a worker that dies (the kernel's OOM killer, a crash in the core) or overruns the
  time limit fails only the point it was running, which is known exactly, and is
  replaced; ``ProcessPoolExecutor`` would break the whole pool and fail every pending
  point with it;
- a worker is a fresh interpreter running ``fabricsim.pool`` (not a fork of this
  process, which may hold Arrow's or Ray's threads), and never imports the caller's
  main module as ``multiprocessing``'s spawn and forkserver do: a script calling
  ``fabricsim.sweep`` needs no ``if __name__ == "__main__"`` guard, and a program
  read from stdin works;
- workers ignore Ctrl-C, so a terminal's interrupt reaches only the sweep, which stops
  them: a point never counts as failed because the user interrupted the sweep.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import deque
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Deque, Dict, List, Optional, Tuple

from ._core import ScenarioError
from .point import Task, run_task

Done = Callable[[int, str, Any], None]

#: How often the caller's ``tick`` runs while points are under way (progress bar).
TICK_SECONDS = 0.5

#: A worker's first lines: Ctrl-C ignored before anything else, this process's module
#: search path, then the task loop. Arguments: the task and result pipes' descriptors.
#: It leaves with ``os._exit``: everything it made is written and renamed by then, and
#: an interpreter's orderly exit (unloading Arrow and numpy) took a tenth of a second
#: that the sweep spent waiting.
_BOOT = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
         "from multiprocessing.connection import Connection\n"
         "tasks = Connection(int(sys.argv[1]), writable=False); results = Connection(int(sys.argv[2]), readable=False)\n"
         "sys.path[:] = tasks.recv()\n"
         "from fabricsim.pool import serve\n"
         "serve(tasks, results)\n"
         "os._exit(0)\n")


def worker_env() -> dict:
    """A worker's environment: this process's as it is now, with OpenBLAS (numpy's)
    held to one thread. A worker does no linear algebra, and starting a thread per core
    at numpy's import was a third of the processor time of its start."""
    return {**os.environ, "OPENBLAS_NUM_THREADS": "1"}


def default_jobs() -> int:
    """One worker per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def serve(tasks: Connection, results: Connection) -> None:
    """A worker process: runs the tasks it is sent until it is sent None or the sweep
    goes away."""
    while True:
        try:
            task = tasks.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        try:
            results.send(run_task(task))
        except OSError:
            return


class _Worker:
    def __init__(self) -> None:
        task_r, task_w = os.pipe()
        result_r, result_w = os.pipe()
        try:
            self.proc = subprocess.Popen([sys.executable, "-c", _BOOT, str(task_r), str(result_w)],
                                         pass_fds=(task_r, result_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         env=worker_env())
        except BaseException:
            for fd in (task_r, task_w, result_r, result_w):
                os.close(fd)
            raise
        os.close(task_r)
        os.close(result_w)
        self.tasks = Connection(task_w, readable=False)
        self.results = Connection(result_r, writable=False)
        self.task: Optional[int] = None
        self.started = 0.0
        self.send(list(sys.path))

    def send(self, obj: Any) -> bool:
        """Sends a message; False if the worker has gone."""
        try:
            self.tasks.send(obj)
            return True
        except OSError:
            return False

    def dismiss(self) -> bool:
        """Asks an idle worker to leave; whether it was asked."""
        return self.task is None and self.proc.poll() is None and self.send(None)

    def stop(self, dismissed: bool = False) -> None:
        """Ends the worker: asks an idle one to leave (unless ``dismissed`` already),
        kills a busy one (its point's folder is not in place until it is complete, so
        nothing half-written stays)."""
        if dismissed or self.dismiss():
            try:
                self.proc.wait(2)
            except subprocess.TimeoutExpired:
                pass
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.tasks.close()
        self.results.close()


def _death(exitcode: Optional[int]) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        hint = " (the kernel's out-of-memory killer sends SIGKILL)" if exitcode == -signal.SIGKILL else ""
        return f"the worker process was killed by {name}{hint}"
    return f"the worker process exited with status {exitcode}"


def run_pool(tasks: List[Task], jobs: int, done: Done, *, timeout: Optional[float] = None,
             tick: Callable[[], None] = lambda: None, drained: Callable[[], None] = lambda: None) -> None:
    """Runs ``tasks`` on ``jobs`` worker processes, one point at a time each.
    ``drained`` runs once, when the last points are under way and a core has fallen
    idle: the sweep prepares what it needs at the end there rather than after."""
    queue: Deque[int] = deque(range(len(tasks)))
    workers: List[_Worker] = []
    idle_work: Optional[Callable[[], None]] = drained
    try:
        while queue or any(w.task is not None for w in workers):
            if idle_work is not None and not queue and any(w.task is None for w in workers):
                idle_work, run_now = None, idle_work
                run_now()
            while len(workers) < min(jobs, len(queue) + sum(w.task is not None for w in workers)):
                workers.append(_Worker())
            for w in workers:
                if w.task is None and queue:
                    w.task = queue.popleft()
                    w.started = time.monotonic()
                    # A worker that died before taking it shows as a death below.
                    w.send(tasks[w.task])
            busy = [w for w in workers if w.task is not None]
            wait_for = TICK_SECONDS
            if timeout is not None:
                now = time.monotonic()
                wait_for = max(0.0, min([wait_for] + [w.started + timeout - now for w in busy]))
            # A worker's result pipe is readable when it has answered or has died (EOF).
            wait([w.results for w in busy], wait_for)
            for w in busy:
                outcome: Optional[Tuple[str, Any]] = None
                gone = False
                try:
                    if w.results.poll():
                        outcome = w.results.recv()
                except (EOFError, OSError):
                    gone = True
                if outcome is None and (gone or w.proc.poll() is not None):
                    outcome = ("failed", _death(w.proc.wait()))
                    gone = True
                if outcome is None and timeout is not None and time.monotonic() - w.started > timeout:
                    w.proc.kill()
                    outcome = ("failed", f"timed out after {timeout:g} s (the worker was stopped)")
                    gone = True
                if outcome is None:
                    continue
                index, w.task = w.task, None
                if gone:
                    w.stop()
                    workers.remove(w)
                assert index is not None
                done(index, *outcome)
            tick()
    finally:
        # All asked first, so that they leave side by side.
        asked = [w.dismiss() for w in workers]
        for w, dismissed in zip(workers, asked):
            w.stop(dismissed)


def _ray_task(task: Task) -> Tuple[str, Any]:
    """A point on a Ray worker: the folder comes back as files (the worker may be on
    another machine), written by the sweep."""
    return run_task(task)


def ray_address_problem(address: str) -> Optional[str]:
    """Why ``--ray address`` cannot be used, before anything is started (None if fine)."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return (f"--ray {address}: Ray is not installed in this Python; install it with "
                f"pip install 'fabricsim[ray]' (or pip install ray), or leave out --ray to use the local process pool")
    return None


def ray_connect(address: str) -> bool:
    """Connects this process to the Ray cluster ``address`` names: "auto" (the cluster
    this machine belongs to), "local" (start Ray here for this sweep), or a cluster's
    address ("ray://head:10001", "head:6379"). If Ray is already initialised in this
    process (``ray.init`` called by the user), that cluster is used as it is. Returns
    whether the connection is this sweep's own, to close when it ends."""
    problem = ray_address_problem(address)
    if problem:
        raise ScenarioError(problem)
    import ray

    if ray.is_initialized():
        return False
    try:
        if address == "local":
            ray.init(include_dashboard=False, logging_level="ERROR", log_to_driver=False)
        else:
            ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ScenarioError(f"--ray {address}: cannot connect to a Ray cluster ({first}); start one with "
                            f"`ray start --head`, give its address, or use --ray local") from None
    return True


def run_ray(tasks: List[Task], own: bool, done: Done, *, timeout: Optional[float] = None,
            tick: Callable[[], None] = lambda: None) -> None:
    """Runs ``tasks`` as Ray tasks of one CPU each on the cluster :func:`ray_connect`
    connected to, and disconnects if the connection is ``own``."""
    import ray
    from ray.exceptions import RayError

    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(_ray_task)
        # As many tasks in flight as the cluster has CPUs: each starts when submitted, so
        # the time limit counts from there, and an interrupt has few to cancel.
        window = max(1, int(ray.cluster_resources().get("CPU", 1)))
        queue: Deque[int] = deque(range(len(tasks)))
        running: Dict[Any, Tuple[int, float]] = {}
        try:
            while queue or running:
                while queue and len(running) < window:
                    i = queue.popleft()
                    running[remote.remote(tasks[i])] = (i, time.monotonic())
                ready, _ = ray.wait(list(running), num_returns=1, timeout=TICK_SECONDS)
                for ref in ready:
                    i, _ = running.pop(ref)
                    try:
                        status, payload = ray.get(ref)
                    except RayError as e:
                        lines = [x for x in str(e).splitlines() if x.strip()]
                        status, payload = "failed", f"{type(e).__name__}: {lines[-1] if lines else e}"
                    done(i, status, payload)
                if timeout is not None:
                    now = time.monotonic()
                    for ref, (i, t0) in list(running.items()):
                        if now - t0 > timeout:
                            ray.cancel(ref, force=True)
                            del running[ref]
                            done(i, "failed", f"timed out after {timeout:g} s (the Ray task was cancelled)")
                tick()
        except BaseException:
            for ref in running:
                ray.cancel(ref, force=True)
            raise
    finally:
        if own:
            ray.shutdown()
