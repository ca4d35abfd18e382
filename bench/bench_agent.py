"""The agent front door: warm MCP tool calls against ``story`` processes, on one synthetic book, this tree
beside an older one (``--base``, default the tree before the fast-CLI work) in the same run.

    python bench/bench_agent.py [--quick] [--json] [--keep] [--chapters 3000] [--repeat 50] [--processes 5]
                                [--base 06fd220 | --base none]

On a synthetic book (bench/gen_book.py, seed 1; 3,000 chapters, --quick 300) rebuilt into a fresh
database (SQLite, or $DATABASE_URL), with the shared reference library (../shared/refcsv) imported when
present, side by side in one run, for this tree and for the base tree (``git archive`` of ``--base`` into
the work folder, run on the same database):

1. MCP: one ``manage.py mcp --book <slug>`` server over stdio, driven by the SDK's own client (the way
   a host calls it); each P0 read and the context pack is called once to warm up, then ×N: the wall
   time of ``call_tool`` (JSON-RPC over the pipe, argument checks, the selector, the JSON answer, and
   the SDK client's own validation of the answer against the tool's output schema) and the server
   process's CPU per call (/proc, every thread); the same over streamable HTTP (``uvicorn
   webnovel.asgi:application``, a read key; issue 29: HTTP ≤ 1.3× stdio); beside it (this tree) the
   same call in one process without the protocol (``book_get`` + the selector), its floor.
2. ``story``: the same reads as ``manage.py story <name> <book> …`` processes (what an agent pays
   when it shells out), plus ``story-system-search``, ×M each after one untimed run (which leaves the
   reference index on disk, as any earlier call would), round-robin over the reads and the trees; wall
   time and CPU time (user + system of the child: steadier than wall time on a busy machine).
3. The yardstick: a bare ``python -c 'import json, pathlib, re'`` process — the floor of the old
   plugin's plain per-call scripts before they read any file.
Inputs are picked from the book (bench/bench_reads.py's samples): the current chapter, an open thread,
a character and an alias of it. Goals (issue 15): warm MCP read p50 ≤ 10 ms, context pack p95 ≤ 300 ms,
a ``story`` read process ≤ 0.6× the base tree's, ``story-system-search`` no slower than a plain read.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPO, Bench, phase_run, stats, synthetic_book  # noqa: E402

# The P0 reads of the chapter loop (bench_reads' throughput mix) and the context pack.
P0_READS = ("chapter-recent-tails", "thread-history", "alias-resolve", "thread-overdue", "character")
# main before issue 15's fast CLI, cached reference index and cached thread activity.
BASE = "06fd220"
SEARCH = ["story-system-search", "__BOOK__", "退婚流 打脸"]


def calls_of(samples: dict) -> dict[str, dict]:
    from bench.bench_reads import _calls

    calls = {name: _calls(samples)[name] for name in P0_READS}
    calls["context"] = {"number": samples["current"]}
    return calls


def argv_phase(calls: dict) -> dict:
    """``story`` argument lists for the calls, from the registry's declarations."""
    from kernel.interfaces import interfaces_load

    registry = interfaces_load()
    out = {}
    for name, values in calls.items():
        argv = [name, "__BOOK__"]
        for arg in registry[name].args:
            if arg.name in values:
                flag = [] if arg.positional else ["--" + arg.name.replace("_", "-")]
                argv += [*flag, str(values[arg.name])]
        out[name] = argv
    return out


def inprocess_phase(book: str, calls: dict, repeat: int) -> dict:
    """The same calls in one process, as the server's dispatcher makes them (no protocol): the floor."""
    from agents.reads import interface_call
    from core.selectors import book_get
    from kernel.interfaces import interfaces_load

    registry = interfaces_load()
    out = {}
    for name, arguments in calls.items():
        interface_call(registry[name], book=book_get(slug=book), arguments=arguments)
        samples = []
        for _ in range(repeat):
            start = time.perf_counter()
            interface_call(registry[name], book=book_get(slug=book), arguments=arguments)
            samples.append(time.perf_counter() - start)
        out[name] = stats(samples)
    return out


def process_cpu(pids: list[int]) -> float:
    """User + system CPU seconds of the live processes ``pids`` so far (every thread), from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def children_of_this_process() -> list[int]:
    """The pids whose parent is this process (the stdio server the SDK's client started)."""
    me, found = os.getpid(), []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == me:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


async def _calls_time(client, calls: dict, repeat: int, server: list[int]) -> dict[str, dict]:
    """Per tool: one warm-up call, then ``repeat`` timed ones: wall-time statistics of ``call_tool`` (what
    the host waits for: the protocol both ways, the SDK client's own checks, the server) and ``server_cpu``,
    the server process's CPU seconds per call (every thread; steadier than wall time on a busy machine)."""
    results = {}
    for name, arguments in calls.items():
        first = await client.call_tool(name, arguments)
        if first.is_error:
            raise RuntimeError(f"{name}: {first.content[0].text}")
        samples = []
        cpu = process_cpu(server)
        for _ in range(repeat):
            start = time.perf_counter()
            await client.call_tool(name, arguments)
            samples.append(time.perf_counter() - start)
        results[name] = {**stats(samples), "server_cpu": (process_cpu(server) - cpu) / repeat}
    return results


def mcp_measure(*, book: str, calls: dict, repeat: int, env: dict, tree: Path = REPO) -> dict[str, dict]:
    """Warm tool-call latency (seconds) per tool, over one stdio server of ``tree``."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def run() -> dict[str, dict]:
        params = StdioServerParameters(
            command=sys.executable, args=[str(tree / "manage.py"), "mcp", "--book", book], cwd=str(tree), env=env
        )
        async with Client(params) as client:
            return await _calls_time(client, calls, repeat, children_of_this_process())

    return anyio.run(run)


def apikey_phase() -> str:
    """Phase: a read key for every book (the raw value), for the HTTP door."""
    from core.services import apikey_create

    return apikey_create(name="bench-agent", scope="read")[1]


def http_measure(*, book: str, calls: dict, repeat: int, env: dict, key: str, tree: Path = REPO) -> dict[str, dict]:
    """The same as ``mcp_measure`` over streamable HTTP: ``uvicorn webnovel.asgi:application`` of ``tree``
    (one worker) on a free local port, the SDK's client with an API key."""
    import socket

    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = [sys.executable, "-m", "uvicorn", "webnovel.asgi:application", "--port", str(port), "--log-level", "warning"]
    server = subprocess.Popen(argv, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"uvicorn did not start: {server.stderr.read().decode()[-400:]}") from None
                time.sleep(0.1)

        async def run() -> dict[str, dict]:
            async with httpx2.AsyncClient(headers={"X-API-Key": key}, timeout=60) as http:
                transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp/{book}", http_client=http)
                async with Client(transport) as client:
                    return await _calls_time(client, calls, repeat, [server.pid])

        return anyio.run(run)
    finally:
        server.terminate()
        server.wait(10)


def process_measure(argv: list[str], *, times: int, env: dict, cwd: Path = REPO) -> dict:
    """Wall time (p50 …) of ``times`` runs of ``argv``, with ``cpu_p50``: the child's user + system time."""
    samples, cpu = [], []
    for _ in range(times):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
        samples.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(argv[:4])} failed: {proc.stderr[-400:]}")
    return {**stats(samples), "cpu_p50": stats(cpu)["p50"]}


def tree_export(rev: str, dest: Path) -> Path:
    """The files of ``rev`` in ``dest`` (``git archive``: no checkout, the repository is untouched)."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", rev], cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def story_measure(
    *, trees: dict[str, Path], book: str, argvs: dict, times: int, envs: dict[str, dict], floors: dict | None = None
) -> dict[str, dict]:
    """tree label -> read -> ``process_measure`` figures. Round-robin: every round runs each read of each
    tree once, so a change of the machine's load in the middle of the phase moves every figure alike
    (a plain read and ``story-system-search`` are compared within a few milliseconds). ``floors`` (name ->
    argv, run in this tree) join the same rounds, under the label "floor"."""
    runs = {
        (label, name): [sys.executable, "manage.py", "story", *[book if a == "__BOOK__" else a for a in cli]]
        for label in trees
        for name, cli in argvs.items()
    }
    here = next(iter(trees))
    trees, envs = {**trees, "floor": trees[here]}, {**envs, "floor": envs[here]}
    runs |= {("floor", name): argv for name, argv in (floors or {}).items()}
    for (label, _), argv in runs.items():  # untimed: leaves what a first call leaves on disk
        process_measure(argv, times=1, env=envs[label], cwd=trees[label])
    samples: dict[tuple[str, str], list[dict]] = {key: [] for key in runs}
    for _ in range(times):
        for (label, name), argv in runs.items():
            samples[label, name].append(process_measure(argv, times=1, env=envs[label], cwd=trees[label]))
    out: dict[str, dict] = {label: {} for label, _ in runs}
    for (label, name), measured in samples.items():
        out[label][name] = {
            **stats([m["p50"] for m in measured]),
            "cpu_p50": stats([m["cpu_p50"] for m in measured])["p50"],
        }
    return out


def main(argv: list[str] | None = None) -> int:
    bench = Bench("agent", description=__doc__, argv=argv)
    bench.parser.add_argument(
        "--chapters", type=int, default=None, help="synthetic book size (default 3000; --quick 300)"
    )
    bench.parser.add_argument(
        "--repeat", type=int, default=None, help="warm MCP calls per tool (default 50; --quick 10)"
    )
    bench.parser.add_argument(
        "--processes", type=int, default=None, help="story processes per read (default 5; --quick 2)"
    )
    bench.parser.add_argument(
        "--base", default=BASE, help=f"git revision measured beside this tree (default {BASE}; 'none': skip)"
    )
    args = bench.args
    chapters = args.chapters or (300 if args.quick else 3000)
    repeat = args.repeat or (10 if args.quick else 50)
    processes = args.processes or (2 if args.quick else 5)

    bench.log(f"synthetic {chapters}: generate (cached) and rebuild")
    root = synthetic_book(chapters)
    db = bench.database(label="db-agent")
    rebuilt = phase_run("bench.bench_rebuild:rebuild_phase", {"root": str(root)}, db=db)
    bench.log(f"rebuilt in {rebuilt['seconds']:.1f}s")
    from bench.bench_storysystem import REFCSV

    library = phase_run("bench.bench_storysystem:library_phase", db=db)["result"] if REFCSV.is_dir() else None
    samples = phase_run("bench.bench_reads:samples_phase", db=db)["result"]
    calls = calls_of(samples)
    env = {
        **os.environ,
        "DATABASE_URL": db,
        "DJANGO_SETTINGS_MODULE": "webnovel.settings",
        "WEBNOVEL_REFERENCE_INDEX_DIR": str(bench.workdir() / "reference-index"),
    }
    env.pop("WEBNOVEL_TESTING", None)
    trees = {"this tree": REPO}
    if args.base.lower() != "none":
        trees[f"base {args.base}"] = tree_export(args.base, bench.workdir() / "base")

    # One index folder per tree: trees of different index formats would remove each other's file.
    envs = {
        label: {**env, "WEBNOVEL_REFERENCE_INDEX_DIR": str(bench.workdir() / "reference-index" / str(i))}
        for i, label in enumerate(trees)
    }
    story_argv = phase_run("bench.bench_agent:argv_phase", {"calls": calls}, db=db)["result"]
    story_argv["story-system-search"] = SEARCH
    mcp, http = {}, {}
    key = phase_run("bench.bench_agent:apikey_phase", db=db)["result"]
    for label, tree in trees.items():
        bench.log(f"{label}: MCP over stdio, {len(calls)} tools ×{repeat} warm")
        mcp[label] = mcp_measure(book=samples["book"], calls=calls, repeat=repeat, env=envs[label], tree=tree)
        bench.log(f"{label}: MCP over streamable HTTP (uvicorn), {len(calls)} tools ×{repeat} warm")
        try:
            http[label] = http_measure(
                book=samples["book"], calls=calls, repeat=repeat, env=envs[label], key=key, tree=tree
            )
        except Exception as exc:  # noqa: BLE001 — a tree without the HTTP door (older) is measured over stdio only
            bench.note(f"{label}: HTTP not measured ({type(exc).__name__}: {str(exc)[:200]})")
    bench.log(f"story processes ×{processes} each, round-robin over {len(trees)} tree(s) and the floors")
    # Issue 29's floor of a `story` process: Django's own start with this project's settings and apps; beside
    # it the start every command of this tree makes (webnovel.cli.django_start: the collector paused, then the
    # start's objects frozen). Both in the same rounds as the reads.
    floors = {
        "django.setup()": [sys.executable, "-c", "import django; django.setup()"],
        "django_start()": [sys.executable, "-c", "from webnovel.cli import django_start; django_start()"],
    }
    story = story_measure(
        trees=trees, book=samples["book"], argvs=story_argv, times=processes, envs=envs, floors=floors
    )
    floors_measured = story.pop("floor")
    setup, start = floors_measured["django.setup()"], floors_measured["django_start()"]
    inproc = phase_run(
        "bench.bench_agent:inprocess_phase", {"book": samples["book"], "calls": calls, "repeat": repeat}, db=db
    )["result"]
    floor = process_measure([sys.executable, "-c", "import json, pathlib, re"], times=processes, env=env)

    rows = []
    for name in calls:
        row = {"read": name}
        for label in trees:
            row[f"MCP p50 ms ({label})"] = mcp[label][name]["p50"] * 1000
            row[f"server CPU ms/call ({label})"] = mcp[label][name]["server_cpu"] * 1000
        row["MCP p95 ms (this tree)"] = mcp["this tree"][name]["p95"] * 1000
        row["in-process p50 ms"] = inproc[name]["p50"] * 1000
        if http.get("this tree"):
            row["HTTP p50 ms"] = http["this tree"][name]["p50"] * 1000
            row["HTTP server CPU ms/call"] = http["this tree"][name]["server_cpu"] * 1000
            row["HTTP × stdio p50"] = http["this tree"][name]["p50"] / mcp["this tree"][name]["p50"]
            row["HTTP × stdio CPU"] = http["this tree"][name]["server_cpu"] / max(
                mcp["this tree"][name]["server_cpu"], 1e-9
            )
        rows.append(row)
    bench.table(f"Warm MCP tool call, {chapters:,} chapters (×{repeat})", rows)
    rows = []
    for name in story_argv:
        row = {"story process": name}
        for label in trees:
            row[f"wall p50 ms ({label})"] = story[label][name]["p50"] * 1000
            row[f"CPU p50 ms ({label})"] = story[label][name]["cpu_p50"] * 1000
        row["CPU × django.setup()"] = story["this tree"][name]["cpu_p50"] / setup["cpu_p50"]
        row["CPU × django_start()"] = story["this tree"][name]["cpu_p50"] / start["cpu_p50"]
        if len(trees) == 2:
            base = next(label for label in trees if label != "this tree")
            row["CPU × base"] = story["this tree"][name]["cpu_p50"] / story[base][name]["cpu_p50"]
            row["wall × base"] = story["this tree"][name]["p50"] / story[base][name]["p50"]
        rows.append(row)
    bench.table(f"`story` processes (×{processes} each, after one untimed run)", rows)
    here = mcp["this tree"]
    p0 = [here[n]["p50"] * 1000 for n in P0_READS]
    plain = [story["this tree"][n]["cpu_p50"] for n in P0_READS]
    bench.note(
        f"P0 reads over MCP: p50 {min(p0):.2f}–{max(p0):.2f} ms; context pack p95 {here['context']['p95'] * 1000:.0f} ms; "
        f"story-system-search process CPU {story['this tree']['story-system-search']['cpu_p50'] * 1000:.0f} ms vs the "
        f"P0 read processes {min(plain) * 1000:.0f}–{max(plain) * 1000:.0f} ms; "
        f"a bare Python process (the old plugin's per-script floor) p50 {floor['p50'] * 1000:.0f} ms; "
        f"a bare django.setup() process CPU p50 {setup['cpu_p50'] * 1000:.0f} ms (issue 29: a read ≤ 1.05× it), "
        f"the tree's own start (django_start, GC paused) {start['cpu_p50'] * 1000:.0f} ms."
    )
    bench.extra.update(
        {
            "mcp": mcp,
            "http": http,
            "story": story,
            "python_floor": floor,
            "django_setup": setup,
            "django_start": start,
            "calls": calls,
            "rebuild_s": rebuilt["seconds"],
            "library": library,
        }
    )
    bench.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
