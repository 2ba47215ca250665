"""No test holds floats to bit equality without saying why. A call that compares exactly
(assert_array_equal, assert_equal, array_equal, array_equiv, torch.equal, assert_allclose or
assert_close at rtol 0 and atol 0, pandas' check_exact=True) carries `# exact: <reason>` on one
of its lines or on a comment line just above: integers, a copy, a round trip through a file,
the same computation run again.
Floats of two computations that may round apart (another batching, code path, device, or
another CPU's kernels) are compared within a tolerance from the dtype's rounding instead
(tests/tolerances.py). Asserting that two arrays differ (`not torch.equal(...)`) needs no
reason."""

import ast
import io
import re
import tokenize
from pathlib import Path

TESTS = Path(__file__).resolve().parent
MARKER = re.compile(r"#\s*exact:\s*\S")  # a comment that starts with it, and says why
EXACT = {"assert_array_equal", "assert_equal", "array_equal", "array_equiv"}
ZERO_TOLERANCE = {"assert_allclose": 0.0, "assert_close": None, "allclose": None,
                  "isclose": None}  # the call's atol when it is not given (None: not zero)


def _name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        owner = func.value.id if isinstance(func.value, ast.Name) else ""
        return "torch.equal" if (owner, func.attr) == ("torch", "equal") else func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _keyword(call: ast.Call, name: str, default: object) -> object:
    for k in call.keywords:
        if k.arg == name:
            return k.value.value if isinstance(k.value, ast.Constant) else k.value
    return default


def is_exact(call: ast.Call) -> bool:
    """Whether the call compares floats bit for bit."""
    name = _name(call)
    if name in EXACT or name == "torch.equal":
        return True
    if name in ZERO_TOLERANCE:
        return (_keyword(call, "rtol", None) == 0
                and _keyword(call, "atol", ZERO_TOLERANCE[name]) == 0)
    return _keyword(call, "check_exact", False) is True


def _reasoned_lines(source: str) -> set[int]:
    """The lines an `# exact:` comment stands for: its own, and the next one when it is
    alone on its line."""
    lines = set()
    for t in tokenize.generate_tokens(io.StringIO(source).readline):
        if t.type == tokenize.COMMENT and MARKER.match(t.string):
            alone = t.line.lstrip().startswith("#")
            lines.update((t.start[0], t.start[0] + 1) if alone else (t.start[0],))
    return lines


def unexplained(source: str) -> list[tuple[int, str]]:
    """(line, name) of each exact comparison in `source` with no `# exact:` reason on its
    lines or just above; a comparison under `not` (the arrays differ) needs none."""
    reasoned = _reasoned_lines(source)
    tree = ast.parse(source)
    negated = {id(n.operand) for n in ast.walk(tree)
               if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and id(node) not in negated and is_exact(node):
            if not reasoned & set(range(node.lineno, node.end_lineno + 1)):
                found.append((node.lineno, _name(node)))
    return sorted(found)


def test_every_exact_comparison_of_floats_in_the_tests_says_why():
    files = sorted(p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts)
    assert len(files) > 50
    missing = [f"{path.relative_to(TESTS.parent)}:{line} {name}" for path in files
               for line, name in unexplained(path.read_text())]
    assert not missing, ("exact comparisons without `# exact: <why>` (or compare within "
                         "tests/tolerances.py's close_in):\n" + "\n".join(missing))


SAMPLE = '''
np.testing.assert_array_equal(a, b)
np.testing.assert_array_equal(labels, want)  # exact: integers
assert torch.equal(p, q)
assert not torch.equal(p, r)
assert np.array_equal(x, y) == tied
np.testing.assert_allclose(a, b, rtol=0)
np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
torch.testing.assert_close(a, b, rtol=0, atol=0.0)
torch.testing.assert_close(a, b, rtol=0)
pd.testing.assert_frame_equal(one, two, check_exact=True)
pd.testing.assert_frame_equal(one, two)
np.testing.assert_array_equal(
    got, want)  # exact: a round trip
np.testing.assert_array_equal(a, b)  # exact:
np.testing.assert_array_equal(a, b)  # the same, exact: no
assert_array_equal(a, b)
np.equal(a, b)
# exact: a copy
torch.equal(p, q)
x = 1  # exact: integers
torch.equal(p, q)
# exact: integers

torch.equal(p, q)
'''


def test_the_check_finds_each_form_and_takes_a_stated_reason():
    assert unexplained(SAMPLE) == [
        (2, "assert_array_equal"), (4, "torch.equal"), (6, "array_equal"),
        (7, "assert_allclose"), (9, "assert_close"), (11, "assert_frame_equal"),
        (15, "assert_array_equal"), (16, "assert_array_equal"), (17, "assert_array_equal"),
        (22, "torch.equal"), (25, "torch.equal")]
