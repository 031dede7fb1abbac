"""Red-team suite: hostile monitor programs against the real sandbox pool.

Every case is a real hostile program run through :class:`SandboxPool` (fresh forked
child per candidate, rlimits, RestrictedPython). For each one we check that:

* the candidate gets a clear status from the expected set (and no scores unless ok);
* no secret reached it: a canary sits in the host's environment and in a file in the
  host's working directory, and appears nowhere in the result (message, errors,
  printed output, oracle report, scores read back as characters);
* no file was created, neither in the workers' directory nor in the host's;
* the host is unaffected (its environment and random state), and the same worker
  then scores a benign program exactly as before the attack (nothing poisoned).
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from sandbox_support import BENIGN, make_trajectories

from monsearch.sandbox.evaluate import CandidateResult, SandboxLimits, SandboxPool

CANARY = "canary-5e1f0c9a7b3d2e48"
CANARY_ENV = "MONSEARCH_TEST_CANARY"
TRAJS = make_trajectories(20)
# The first failed trajectory decides a candidate (max_error_rate 0), and the
# per-trajectory budget leaves room for a machine several times slower than ours:
# a program's status must not depend on how fast the machine is.
LIMITS = SandboxLimits(wall_s=5.0, cpu_s=3.0, memory_mb=256, per_traj_ms=1000, max_error_rate=0.0)


def prog(body: str, prelude: str = "") -> str:
    """A program whose score(traj) runs ``body``."""
    lines = "".join(f"    {line}\n" for line in body.strip("\n").splitlines())
    return f"{prelude}\ndef score(traj):\n{lines}"


ERR = {"error"}
OK = {"ok"}
SLOW = {"timeout"}
MEM = {"memory"}
BAD = {"invalid"}

ATTACKS: list[tuple[str, str, set[str]]] = [
    # --- escapes through the object graph
    ("subclasses_walk", prog("return len(().__class__.__bases__[0].__subclasses__())"), ERR),
    ("mro_object", prog("return len(int.mro()[-1].__subclasses__())"), ERR),
    ("mro_runtime", prog("o = int.mro()[-1]\nreturn 1.0"), ERR),
    ("raise_baseexception_via_mro", prog("raise ValueError.mro()[-3]('x')"), ERR),
    (
        "gi_frame_literal",
        prog("g = (s for s in traj.steps)\nreturn g.gi_frame.f_back.f_globals"),
        ERR,
    ),
    (
        "gi_code_runtime_name",
        prog("g = (s for s in traj.steps)\nreturn getattr(g, 'gi_' + 'code')"),
        ERR,
    ),
    (
        "generator_throw",
        prog("g = (s for s in traj.steps)\nnext(g)\ng.throw(ValueError)\nreturn 1.0"),
        ERR,
    ),
    (
        "zombie_generator_finally",
        prog(
            "return 1.0",
            "def gen():\n    try:\n        yield 1\n    finally:\n        while True:\n            pass\n",
        ),
        ERR,
    ),
    ("coroutine_frame", prog("return 1.0", "async def co():\n    pass\n"), ERR),
    ("coroutine_attr", prog("return traj.cr_frame"), ERR),
    ("format_traversal", prog("return len('{0.__class__.__mro__}'.format(traj))"), ERR),
    ("format_map_traversal", prog("return len('{t.__class__}'.format_map({'t': traj}))"), ERR),
    ("format_unbound", prog("return len(str.format('{0.__class__}', traj))"), ERR),
    ("fstring_repr_is_harmless", prog("return float(len(f'{traj.steps!r}'))"), OK),
    ("fstring_format_spec", prog("return len(f\"{traj:{'{0.__class__}'}}\")"), ERR),
    (
        "traceback_literal",
        prog("try:\n    1 / 0\nexcept Exception as e:\n    return e.__traceback__.tb_frame"),
        ERR,
    ),
    (
        "traceback_runtime",
        prog(
            "try:\n    1 / 0\nexcept Exception as e:\n    return len(getattr(e, 'with_traceback'))"
        ),
        ERR,
    ),
    (
        "exception_args_class",
        prog("try:\n    1 / 0\nexcept Exception as e:\n    return e.args[0].__class__"),
        ERR,
    ),
    ("builtins_dict", prog("return __builtins__['open']('x')"), ERR),
    ("getattr_dunder", prog("return getattr(traj, '__class__')"), ERR),
    ("getattr_string_built", prog("return getattr(traj, '_' + '_class__')"), ERR),
    ("getattr_on_function", prog("return getattr(score, 'func_globals')"), ERR),
    ("dict_view_mapping", prog("return len(traj.keys().mapping)"), ERR),
    ("type_builtin", prog("return type(traj).__mro__"), ERR),
    ("type_builtin_runtime", prog("t = type(traj)\nreturn 1.0"), ERR),
    ("vars_globals_dir", prog("return len(vars()) + len(globals()) + len(dir())"), ERR),
    ("posonly_shadow", "def score(traj, _getattr_=None, /):\n    return 1.0\n", ERR),
    ("except_star", prog("try:\n    pass\nexcept* ValueError:\n    pass\nreturn 1.0"), ERR),
    ("class_str_subclass", prog("return 1.0", "class S(str):\n    pass\n"), ERR),
    # --- imports, files, process control
    ("import_os", prog("return 1.0", "import os\n"), ERR),
    ("dunder_import", prog("return __import__('os').getpid()"), ERR),
    ("from_import", prog("return 1.0", "from os import system\n"), ERR),
    ("open_secret_file", prog("return len(open('secret.txt').read())"), ERR),
    ("write_file", prog("open('pwned.txt', 'w').write('x')\nreturn 1.0"), ERR),
    ("print_to_file", prog("print('x', file=traj)\nreturn 1.0"), ERR),
    ("eval_alias", prog("e = eval\nreturn e('1')"), ERR),
    ("compile_builtin", prog("return compile('1', 'x', 'eval')"), ERR),
    ("exit_quit", prog("exit(0)\nquit(0)\nreturn 1.0"), ERR),
    ("sys_os_exit", prog("sys.exit(0)\nos._exit(0)"), ERR),
    ("raise_system_exit", prog("raise SystemExit(0)"), ERR),
    ("raise_keyboard_interrupt", prog("raise KeyboardInterrupt"), ERR),
    ("signals", prog("signal.alarm(1)\nreturn 1.0"), ERR),
    ("random_seed", prog("random.seed(1)\nreturn random.random()"), ERR),
    # --- denial of service
    ("cpu_loop", prog("while True:\n    pass"), SLOW),
    (
        "cpu_loop_swallow",
        prog(
            "while True:\n    try:\n        while True:\n            pass\n    except:\n        pass\n    finally:\n        while True:\n            pass"
        ),
        SLOW,
    ),
    ("recursion_bomb", prog("return f(0)", "def f(n):\n    return f(n + 1)\n"), ERR),
    (
        "recursion_bomb_catch_retry",
        prog(
            "return f(0)",
            "def f(n):\n    try:\n        return f(n + 1)\n    except Exception:\n        return f(n + 1)\n",
        ),
        SLOW,
    ),
    ("mem_bomb_list", prog("return len([0] * 10**10)"), MEM),
    ("mem_bomb_string", prog("return len('a' * 10**10)"), MEM),
    ("mem_bomb_ljust", prog("return len('a'.ljust(10**10))"), MEM),
    ("mem_growing_list", prog("x = []\nwhile True:\n    x.append('a' * 10**6)"), MEM | SLOW),
    ("bigint_pow", prog("return float(10 ** 10 ** 8 > 0)"), SLOW),
    ("bigint_builtin_pow", prog("return float(pow(7, 10 ** 8) > 0)"), SLOW),
    ("int_to_str_limit", prog("return float(len(str(10 ** 5000)))"), ERR),
    ("regex_catastrophic", prog("return float(re_search('(a+)+$', 'a' * 100000 + '!'))"), OK),
    ("regex_huge_pattern", prog("return float(re_search('a' * 100000, traj.prompt))"), ERR),
    ("regex_sub_blowup", prog("return float(len(re_sub('', 'x' * 1000, 'a' * 1500000)))"), ERR),
    ("print_flood_forever", prog("while True:\n    print('x' * 1000)"), SLOW),
    ("print_flood_bounded", prog("for i in range(2000):\n    print('y' * 100)\nreturn 1.0"), OK),
    (
        "nested_genexp_c_stack",
        prog(
            "g = iter([1])\nfor i in range(100000):\n    g = (x for x in g)\nreturn float(next(g))"
        ),
        {"crash", "error", "timeout"},
    ),
    ("compile_recursion_bomb", "x = " + "1+" * 20000 + "1\ndef score(t):\n    return 1.0\n", ERR),
    ("source_too_large", "x = 1\n" * 12000 + "def score(t):\n    return 1.0\n", ERR),
    ("huge_exception_message", prog("raise ValueError('a' * 10**8)"), ERR),
    # --- mutating what the next candidate sees
    ("mutate_setattr", prog("traj.steps = ()\nreturn 1.0"), ERR),
    ("mutate_setitem", prog("traj['task'] = 'x'\nreturn 1.0"), ERR),
    ("mutate_nested_method", prog("traj.requests[0].headers.update({'x': 'y'})\nreturn 1.0"), ERR),
    ("mutate_augassign_attr", prog("traj.steps[0].requests += (1,)\nreturn 1.0"), ERR),
    ("mutate_augassign_item", prog("traj.steps[0]['requests'] += (1,)\nreturn 1.0"), ERR),
    (
        "mutate_swallowed",
        prog(
            "for m in (traj.hosts.clear, traj.steps[0].popitem):\n    try:\n        m()\n    except TypeError:\n        pass\nreturn 1.0"
        ),
        OK,
    ),
    (
        "mutate_copy_only",
        prog(
            "d = traj.to_dict()\nd['steps'].clear()\nd['task'] = 'x'\nreturn float(len(traj.steps))"
        ),
        OK,
    ),
    (
        "poison_own_globals",
        prog(
            "global len, sum, re_search\nlen = None\nsum = None\nre_search = None\nreturn 1.0",
            "max = None\noracle = None\n",
        ),
        OK,
    ),
    ("poison_math_namespace", prog("return 1.0", "math.sqrt = None\n"), ERR),
    ("poison_helper_attr", prog("re_search.cache = {}\nreturn 1.0"), ERR),
    ("poison_dict_unbound", prog("getattr(dict, 'update')(traj, {'a': 1})\nreturn 1.0"), ERR),
    # --- leaking host data through results
    (
        "leak_environment",
        prog(
            "found = []\n"
            "for probe in (lambda: environ, lambda: os.environ, lambda: getattr(math, 'environ'),\n"
            "              lambda: str(math), lambda: repr(re_search), lambda: str(traj), lambda: printed):\n"
            "    try:\n"
            "        found.append(str(probe()))\n"
            "    except Exception as e:\n"
            "        found.append(str(e.args))\n"
            "text = ''.join(found)\n"
            "print(text)\n"
            "return float(sum(ord(c) for c in text[:64]))"
        ),
        OK,
    ),
    ("leak_via_error_message", prog("raise ValueError(str(traj) + repr(math))"), ERR),
    # --- unsafe results
    ("return_nan", prog("return float('nan')"), BAD),
    ("return_inf", prog("return 1e308 * 10"), BAD),
    ("return_str", prog("return 'suspicious'"), BAD),
    ("return_none", prog("return None"), BAD),
    ("return_list", prog("return [1.0]"), BAD),
    ("return_huge_int", prog("return 10 ** 400"), BAD),
    ("return_live_function", prog("return score"), BAD),
    ("return_deep_nesting", prog("x = []\nfor i in range(10**5):\n    x = [x]\nreturn x"), BAD),
]


@dataclass
class Arena:
    pool: SandboxPool
    baseline: np.ndarray
    host_dir: Path


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    host_dir = tmp_path_factory.mktemp("host-cwd")
    (host_dir / "secret.txt").write_text(CANARY)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(CANARY_ENV, CANARY)
        mp.chdir(host_dir)
        # One worker: the benign run after each attack lands on the very same worker.
        with SandboxPool(TRAJS, workers=1, limits=LIMITS) as pool:
            baseline = pool.evaluate(BENIGN)
            assert baseline.ok
            yield Arena(pool, baseline.scores, host_dir)


def _leaks(result: CandidateResult) -> bool:
    blob = json.dumps(result.to_dict())
    if result.scores is not None:
        blob += "".join(
            chr(int(v)) for v in result.scores if 0 < v < 0x110000 and float(v).is_integer()
        )
    return CANARY in blob or "secret.txt" in result.output


def test_suite_is_large_and_distinct():
    names = [name for name, _src, _exp in ATTACKS]
    assert len(names) == len(set(names)) >= 40
    assert len({src for _n, src, _e in ATTACKS}) == len(ATTACKS)


@pytest.mark.parametrize(("name", "source", "expected"), ATTACKS, ids=[a[0] for a in ATTACKS])
def test_attack_is_contained(arena, name, source, expected):
    host_files = sorted(arena.host_dir.rglob("*"))
    rng_state = random.getstate()

    result = arena.pool.evaluate(source)

    assert result.status in expected, (name, result.status, result.message)
    assert result.message or result.ok
    if not result.ok:
        assert result.scores is None
    assert not _leaks(result), name
    assert len(result.output) <= 8192 and len(result.message) <= 4000
    assert all(len(e["message"]) <= 2000 for e in result.errors)
    assert list(arena.pool.workdir.iterdir()) == []
    assert sorted(arena.host_dir.rglob("*")) == host_files
    assert os.environ[CANARY_ENV] == CANARY and random.getstate() == rng_state

    after = arena.pool.evaluate(BENIGN)
    assert after.ok and np.array_equal(after.scores, arena.baseline), name


def test_bounded_print_flood_reports_bounded_output(arena):
    result = arena.pool.evaluate(dict((n, s) for n, s, _e in ATTACKS)["print_flood_bounded"])
    assert result.ok and 0 < len(result.output) <= 4096


def test_neighbouring_work_is_unaffected_by_hostile_candidates():
    with SandboxPool(TRAJS, workers=2, limits=LIMITS) as pool:
        baseline = pool.evaluate(BENIGN).scores
        hostile = {name: src for name, src, _e in ATTACKS}
        batch = [
            hostile["cpu_loop"],
            BENIGN,
            hostile["mem_bomb_list"],
            BENIGN,
            hostile["nested_genexp_c_stack"],
            BENIGN,
        ]
        results = pool.evaluate_many(batch)
        assert results[0].status == "timeout" and results[2].status == "memory"
        for r in results[1::2]:
            assert r.ok and np.array_equal(r.scores, baseline)
