"""The agent front door: warm MCP tool calls against ``story`` processes, on one synthetic book.

    python bench/bench_agent.py [--quick] [--json] [--keep] [--chapters 3000] [--repeat 50] [--processes 5]

On a synthetic book (bench/gen_book.py, seed 1; 3,000 chapters, --quick 300) rebuilt into a fresh
database (SQLite, or $DATABASE_URL), side by side in one run:

1. MCP: one ``manage.py mcp --book <slug>`` server over stdio, driven by the SDK's own client (the way
   a host calls it); each P0 read and the context pack is called once to warm up, then ×N: the wall
   time of ``call_tool`` (JSON-RPC over the pipe, argument checks, the selector, the JSON answer);
   beside it the same call in one process without the protocol (``book_get`` + the selector), its floor.
2. ``story``: the same reads as ``manage.py story <name> <book> …`` processes (what an agent pays
   when it shells out), ×M each.
3. The yardstick: a bare ``python -c 'import json, pathlib, re'`` process — the floor of the old
   plugin's plain per-call scripts before they read any file.
Inputs are picked from the book (bench/bench_reads.py's samples): the current chapter, an open thread,
a character and an alias of it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPO, Bench, phase_run, stats, synthetic_book  # noqa: E402

# The P0 reads of the chapter loop (bench_reads' throughput mix) and the context pack.
P0_READS = ("chapter-recent-tails", "thread-history", "alias-resolve", "thread-overdue", "character")


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


def mcp_measure(*, book: str, calls: dict, repeat: int, env: dict) -> dict[str, dict]:
    """Warm tool-call latency (seconds) per tool, over one stdio server."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def run() -> dict[str, dict]:
        params = StdioServerParameters(
            command=sys.executable, args=[str(REPO / "manage.py"), "mcp", "--book", book], cwd=str(REPO), env=env
        )
        results = {}
        async with Client(params) as client:
            for name, arguments in calls.items():
                first = await client.call_tool(name, arguments)
                if first.is_error:
                    raise RuntimeError(f"{name}: {first.content[0].text}")
                samples = []
                for _ in range(repeat):
                    start = time.perf_counter()
                    await client.call_tool(name, arguments)
                    samples.append(time.perf_counter() - start)
                results[name] = stats(samples)
        return results

    return anyio.run(run)


def process_measure(argv: list[str], *, times: int, env: dict) -> dict:
    samples = []
    for _ in range(times):
        start = time.perf_counter()
        proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True)
        samples.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(argv[:4])} failed: {proc.stderr[-400:]}")
    return stats(samples)


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
    args = bench.args
    chapters = args.chapters or (300 if args.quick else 3000)
    repeat = args.repeat or (10 if args.quick else 50)
    processes = args.processes or (2 if args.quick else 5)

    bench.log(f"synthetic {chapters}: generate (cached) and rebuild")
    root = synthetic_book(chapters)
    db = bench.database(label="db-agent")
    rebuilt = phase_run("bench.bench_rebuild:rebuild_phase", {"root": str(root)}, db=db)
    bench.log(f"rebuilt in {rebuilt['seconds']:.1f}s")
    samples = phase_run("bench.bench_reads:samples_phase", db=db)["result"]
    calls = calls_of(samples)
    env = {**os.environ, "DATABASE_URL": db, "DJANGO_SETTINGS_MODULE": "webnovel.settings"}
    env.pop("WEBNOVEL_TESTING", None)

    bench.log(f"MCP over stdio: {len(calls)} tools ×{repeat} warm")
    mcp = mcp_measure(book=samples["book"], calls=calls, repeat=repeat, env=env)
    inproc = phase_run(
        "bench.bench_agent:inprocess_phase", {"book": samples["book"], "calls": calls, "repeat": repeat}, db=db
    )["result"]
    bench.log(f"story processes ×{processes} each")
    story_argv = phase_run("bench.bench_agent:argv_phase", {"calls": calls}, db=db)["result"]
    story = {}
    for name, cli in story_argv.items():
        cli = [samples["book"] if a == "__BOOK__" else a for a in cli]
        story[name] = process_measure([sys.executable, "manage.py", "story", *cli], times=processes, env=env)
    floor = process_measure([sys.executable, "-c", "import json, pathlib, re"], times=processes, env=env)

    rows = []
    for name in calls:
        rows.append(
            {
                "read": name,
                "MCP p50 ms": mcp[name]["p50"] * 1000,
                "MCP p95 ms": mcp[name]["p95"] * 1000,
                "in-process p50 ms": inproc[name]["p50"] * 1000,
                "story process p50 ms": story[name]["p50"] * 1000,
                "× faster (MCP)": story[name]["p50"] / mcp[name]["p50"],
            }
        )
    bench.table(
        f"Warm MCP tool call vs a `story` process, {chapters:,} chapters (MCP ×{repeat}, story ×{processes})", rows
    )
    p0 = [mcp[n]["p50"] * 1000 for n in P0_READS]
    bench.note(
        f"P0 reads over MCP: p50 {min(p0):.2f}–{max(p0):.2f} ms; context pack p95 {mcp['context']['p95'] * 1000:.0f} ms; "
        f"a bare Python process (the old plugin's per-script floor) p50 {floor['p50'] * 1000:.0f} ms."
    )
    bench.extra.update(
        {"mcp": mcp, "story": story, "python_floor": floor, "calls": calls, "rebuild_s": rebuilt["seconds"]}
    )
    bench.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
