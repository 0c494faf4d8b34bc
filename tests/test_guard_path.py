"""PathGuard: the filesystem server's real escapes, reproduced with links the tests make."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strictmcp.guards import GuardCode, GuardFinding, PathGuard
from strictmcp.guards import path as path_module
from strictmcp.protocol import Severity

pytestmark = pytest.mark.skipif(os.name != "posix", reason="PathGuard resolves POSIX paths only")

# Planted in every name outside the root: no message may ever contain it.
SECRET = "s3cr3t"


@dataclass(frozen=True)
class Tree:
    base: Path
    root: Path
    second: Path
    sibling: Path
    outside: Path

    def inside(self, relative: str) -> str:
        return f"{self.root}/{relative}"


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    base = tmp_path.resolve()
    root, second = base / "data", base / "data2"
    sibling, outside = base / f"data_{SECRET}", base / f"elsewhere-{SECRET}"
    for directory in (
        root / "docs" / "nested" / "deep",
        root / "ünï cødé",
        root / "%2e%2e",
        root / "~",
        root / "a" / "b" / "c",
        second,
        sibling,
        outside,
    ):
        directory.mkdir(parents=True)
    for file in (
        root / "docs" / "readme.md",
        root / "docs" / "nested" / "deep" / "file.txt",
        root / "a..b",
        root / "with space.txt",
        root / ".hidden",
        root / "ünï cødé" / "файл.txt",
        root / "%2e%2e" / "x.txt",
        root / "~" / "literal",
        root / "file.txt",
        sibling / f"{SECRET}.txt",
        outside / f"{SECRET}.txt",
    ):
        file.write_text("x")
    links = {
        "link_in": "docs",
        "abs_in": str(root / "docs"),
        "deep": "a/b/c",
        "dangling_in": "docs/not-yet.txt",
        "out_file": f"../{outside.name}/{SECRET}.txt",
        "out_dir": f"../{outside.name}",
        "chain1": "chain2",
        "chain2": str(root / "chain3"),
        "chain3": f"a/../../{outside.name}",
        "dangling_out": f"../{outside.name}/new-{SECRET}.txt",
        "dangling_dir_out": f"../nowhere-{SECRET}",
        "to_root": "/",
        "loop": "loop",
    }
    for name, target in links.items():
        (root / name).symlink_to(target)
    return Tree(base, root, second, sibling, outside)


@pytest.fixture
def guard(tree: Tree) -> PathGuard:
    return PathGuard((str(tree.root),))


def check(guard: PathGuard, value: str, *leaks: str) -> list[GuardFinding]:
    """The findings, after asserting no message holds the value or a planted secret.

    Values of a few characters are words messages use ("~", "rel"): only longer ones are
    looked for.
    """
    findings = guard.check(value)
    for finding in findings:
        for leak in (SECRET, *leaks, *([value] if len(value) > 8 else [])):
            assert leak not in str(finding), (leak, finding)
    return findings


def codes(guard: PathGuard, value: str, *leaks: str) -> list[str]:
    return [finding.code for finding in check(guard, value, *leaks)]


BENIGN = [
    "docs/readme.md",
    "docs/nested/deep/file.txt",
    "a..b",
    "with space.txt",
    ".hidden",
    "ünï cødé/файл.txt",
    "%2e%2e/x.txt",
    "~/literal",
    "docs//readme.md",
    "docs/./readme.md",
    "docs/",
    ".",
    "new-dir/new-file.txt",
    "link_in/readme.md",
    "abs_in/nested",
    "deep",
    "dangling_in",
]


@pytest.mark.parametrize("relative", BENIGN)
def test_benign_paths_pass_and_resolve_like_the_kernel(
    guard: PathGuard, tree: Tree, relative: str
) -> None:
    value = tree.inside(relative)
    assert check(guard, value) == []
    assert guard.resolve(value) == os.path.realpath(value)


def test_the_root_itself_is_inside(guard: PathGuard, tree: Tree) -> None:
    assert check(guard, str(tree.root)) == []
    assert guard.resolve(str(tree.root)) == str(tree.root)


def test_percent_encoding_is_a_name_and_stays_inside(guard: PathGuard, tree: Tree) -> None:
    value = tree.inside("%2e%2e/%2e%2e/%2e%2e/etc/passwd")
    assert check(guard, value) == []
    assert guard.resolve(value) == value


@pytest.mark.parametrize(
    "template",
    [
        "{sibling}/{secret}.txt",
        "{root}_{secret}/{secret}.txt",  # the root's name as a string prefix
        "{outside}",
        "{base}/.",  # the root's parent (messages name the root, so not the bare prefix)
        "/",
    ],
)
def test_paths_outside_every_root_are_refused(guard: PathGuard, tree: Tree, template: str) -> None:
    value = template.format(secret=SECRET, **vars(tree))
    assert codes(guard, value) == [GuardCode.PATH_OUTSIDE_ROOTS]
    assert guard.resolve(value) is None


@pytest.mark.parametrize(
    "relative",
    [
        "out_file",
        "out_dir",
        f"out_dir/{SECRET}.txt",
        "out_dir/not-there",
        "chain1",
        f"chain1/{SECRET}.txt",
        "link_in/../out_dir",
    ],
)
def test_links_out_of_the_root_are_escapes(guard: PathGuard, tree: Tree, relative: str) -> None:
    found = check(guard, tree.inside(relative), str(tree.outside))
    assert [f.code for f in found] == [GuardCode.PATH_SYMLINK_ESCAPE]
    assert str(tree.root) in found[0].message


def test_what_lies_outside_cannot_be_probed(guard: PathGuard, tree: Tree) -> None:
    through_root = tree.inside(f"to_root{tree.outside}")
    existing = check(guard, f"{through_root}/{SECRET}.txt")
    missing = check(guard, f"{through_root}/missing-{SECRET}.txt")
    below_a_file = check(guard, f"{through_root}/{SECRET}.txt/below")
    assert existing == missing == below_a_file
    assert [f.code for f in existing] == [GuardCode.PATH_SYMLINK_ESCAPE]


@pytest.mark.parametrize("relative", ["dangling_out", "dangling_dir_out/new.txt"])
def test_dangling_links_out_are_refused(guard: PathGuard, tree: Tree, relative: str) -> None:
    assert codes(guard, tree.inside(relative)) == [GuardCode.PATH_DANGLING_SYMLINK]


def test_a_dangling_link_inside_is_a_path_to_create(tree: Tree) -> None:
    value = tree.inside("dangling_in")
    assert PathGuard((str(tree.root),), writable=True).check(value) == []
    must_exist = PathGuard((str(tree.root),), must_exist=True)
    assert codes(must_exist, value) == [GuardCode.PATH_NOT_FOUND]


@pytest.mark.parametrize(
    "relative",
    [
        f"docs/../../{'elsewhere-' + SECRET}/{SECRET}.txt",
        f"../data_{SECRET}/{SECRET}.txt",
        "../../../../../../../../../../../../../../..",
    ],
)
def test_dotdot_out_of_the_root_is_refused(guard: PathGuard, tree: Tree, relative: str) -> None:
    found = check(guard, tree.inside(relative))
    assert [f.code for f in found] == [GuardCode.PATH_OUTSIDE_ROOTS]
    assert "'..'" in found[0].message


def test_dotdot_that_stays_inside_is_a_warning(guard: PathGuard, tree: Tree) -> None:
    value = tree.inside("docs/nested/../../docs/readme.md")
    found = check(guard, value)
    assert [(f.code, f.severity) for f in found] == [(GuardCode.PATH_TRAVERSAL, Severity.WARNING)]
    assert guard.resolve(value) == str(tree.root / "docs" / "readme.md")


def test_dotdot_must_stay_inside_read_lexically_too(guard: PathGuard, tree: Tree) -> None:
    # deep -> a/b/c: the kernel reads deep/../.. as a, but os.path.normpath reads it as the
    # root's parent, and a server that normalizes before opening would open that.
    value = tree.inside("deep/../../x")
    assert os.path.realpath(value) == str(tree.root / "a" / "x")
    found = check(guard, value)
    assert [f.code for f in found] == [GuardCode.PATH_OUTSIDE_ROOTS]
    assert "os.path.normpath" in found[0].message


def test_dotdot_after_a_link_is_read_the_kernels_way_too(guard: PathGuard, tree: Tree) -> None:
    # normpath says the sibling is inside the root; the kernel goes through the link to it.
    value = tree.inside(f"out_dir/../data_{SECRET}")
    assert os.path.normpath(value).startswith(str(tree.root))
    assert codes(guard, value) == [GuardCode.PATH_SYMLINK_ESCAPE]


def test_dotdot_through_a_link_and_back_is_a_warning(guard: PathGuard, tree: Tree) -> None:
    value = tree.inside("out_dir/../data/docs")
    found = check(guard, value)
    assert [(f.code, f.severity) for f in found] == [(GuardCode.PATH_TRAVERSAL, Severity.WARNING)]
    assert guard.resolve(value) == str(tree.root / "docs")


def test_nul_is_refused(guard: PathGuard, tree: Tree) -> None:
    assert codes(guard, tree.inside("docs/readme.md\0.png")) == [GuardCode.PATH_NUL]


@pytest.mark.parametrize("value", ["~", "~/notes.txt", "~root/.ssh/id_rsa", "~nobody/x"])
def test_home_paths_are_refused_unexpanded(guard: PathGuard, value: str) -> None:
    assert codes(guard, value) == [GuardCode.PATH_HOME]


def test_home_paths_when_allowed_are_expanded_and_confined(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    guard = PathGuard((str(tree.root),), allow_home=True)
    monkeypatch.setenv("HOME", str(tree.root))
    assert check(guard, "~/docs/readme.md") == []
    assert guard.resolve("~/docs/readme.md") == str(tree.root / "docs" / "readme.md")
    monkeypatch.setenv("HOME", str(tree.outside))
    assert codes(guard, f"~/{SECRET}.txt") == [GuardCode.PATH_OUTSIDE_ROOTS]
    assert codes(guard, "~no-such-user-here/x") == [GuardCode.PATH_HOME]


@pytest.mark.parametrize("value", ["docs/readme.md", "./docs", "../data/docs", "data"])
def test_relative_paths_are_refused_by_default(guard: PathGuard, value: str) -> None:
    assert codes(guard, value) == [GuardCode.PATH_RELATIVE]


def test_relative_paths_resolve_against_the_first_root(tree: Tree) -> None:
    guard = PathGuard((str(tree.root), str(tree.second)), allow_relative=True)
    assert check(guard, "docs/readme.md") == []
    assert guard.resolve("docs/readme.md") == str(tree.root / "docs" / "readme.md")
    assert guard.resolve(str(tree.second)) == str(tree.second)
    assert codes(guard, f"../data_{SECRET}/{SECRET}.txt") == [GuardCode.PATH_OUTSIDE_ROOTS]
    assert codes(guard, "out_dir") == [GuardCode.PATH_SYMLINK_ESCAPE]
    assert codes(guard, "") == [GuardCode.PATH_UNRESOLVABLE]


@pytest.mark.parametrize(
    "value",
    ["C:\\Windows\\win.ini", "c:/data", "\\\\server\\share\\x", "/srv/data\\..\\..\\etc"],
)
def test_windows_syntax_is_refused(guard: PathGuard, value: str) -> None:
    assert codes(guard, value) == [GuardCode.PATH_WINDOWS_SYNTAX]


def test_unencodable_paths_are_refused(guard: PathGuard, tree: Tree) -> None:
    assert codes(guard, tree.inside("\ud800")) == [GuardCode.PATH_UNRESOLVABLE]
    # A surrogate escape is how Python spells a file name byte that is not UTF-8: a real name.
    assert check(guard, tree.inside("caf\udce9")) == []


@pytest.mark.parametrize("value", [None, 3, ["/srv/data"], {"path": "/srv"}, b"/srv/data"])
def test_non_strings_are_reported(guard: PathGuard, value: object) -> None:
    assert [f.code for f in guard.check(value)] == [GuardCode.NOT_A_STRING]
    assert guard.resolve(value) is None


def test_length_and_component_limits_bound_the_work(tree: Tree) -> None:
    guard = PathGuard((str(tree.root),), max_length=200, max_components=20)
    assert codes(guard, tree.inside("x" * 200)) == [GuardCode.PATH_TOO_LONG]
    assert codes(guard, tree.inside("a/" * 20)) == [GuardCode.PATH_TOO_LONG]
    (tree.root / "wide").symlink_to("/".join(["."] * 30 + ["docs"]))
    found = check(guard, tree.inside("wide"))
    assert [f.code for f in found] == [GuardCode.PATH_TOO_LONG]
    assert "symbolic link" in found[0].message


def test_a_name_longer_than_the_filesystem_allows(guard: PathGuard, tree: Tree) -> None:
    assert codes(guard, tree.inside("n" * 300)) == [GuardCode.PATH_TOO_LONG]


def test_default_limits_walk_deep_paths_quickly(guard: PathGuard, tree: Tree) -> None:
    deep = tree.inside("/".join(["d"] * 200))
    assert check(guard, deep) == []
    assert codes(guard, deep + "/d" * 60) == [GuardCode.PATH_TOO_LONG]


def test_link_loops_and_long_chains_are_refused(guard: PathGuard, tree: Tree) -> None:
    assert codes(guard, tree.inside("loop")) == [GuardCode.PATH_UNRESOLVABLE]
    limit = path_module.MAX_SYMLINKS
    for index in range(limit):
        (tree.root / f"hop{index}").symlink_to(f"hop{index + 1}")
    (tree.root / f"hop{limit}").symlink_to("docs")
    # hop1 is `limit` links from docs, hop0 one more: the kernel agrees on where the line is.
    os.stat(tree.inside("hop1"))
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        os.stat(tree.inside("hop0"))
    assert codes(guard, tree.inside("hop1")) == []
    assert codes(guard, tree.inside("hop0")) == [GuardCode.PATH_UNRESOLVABLE]


def test_several_roots(tree: Tree) -> None:
    guard = PathGuard((str(tree.root), str(tree.second)))
    assert check(guard, f"{tree.second}/new.txt") == []
    found = check(guard, f"{tree.sibling}/{SECRET}.txt")
    assert str(tree.root) in found[0].message
    assert str(tree.second) in found[0].message


def test_the_filesystem_root_as_root_allows_everything(tree: Tree) -> None:
    guard = PathGuard(("/",))
    assert guard.check(f"{tree.outside}/{SECRET}.txt") == []
    assert guard.check(tree.inside("out_dir")) == []


def test_nested_roots(tree: Tree) -> None:
    guard = PathGuard((str(tree.base), str(tree.root)))
    assert guard.check(tree.inside("out_dir")) == []
    assert guard.check(tree.inside("to_root/etc")) != []


def test_roots_are_canonicalized_and_shown_as_configured(tree: Tree) -> None:
    (tree.base / "alias").symlink_to("data")
    guard = PathGuard((f"{tree.base}/alias/",))
    assert check(guard, tree.inside("docs/readme.md")) == []
    assert check(guard, f"{tree.base}/alias/docs/readme.md") == []
    assert guard.resolve(f"{tree.base}/alias/docs") == str(tree.root / "docs")
    found = check(guard, str(tree.outside))
    assert f"{tree.base}/alias/" in found[0].message


@pytest.mark.parametrize(
    ("roots", "error"),
    [
        ((), ValueError),
        (("relative/root",), ValueError),
        (("/no/such/directory/anywhere",), ValueError),
        ("/srv/data", TypeError),
        (["/srv/data"], TypeError),
    ],
)
def test_bad_roots_are_configuration_errors(roots: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        PathGuard(roots)  # type: ignore[arg-type]


def test_a_root_must_be_a_directory(tree: Tree) -> None:
    with pytest.raises(ValueError, match="not a directory"):
        PathGuard((str(tree.root / "file.txt"),))


def test_bad_options_are_configuration_errors(tree: Tree) -> None:
    with pytest.raises(ValueError, match="entry"):
        PathGuard((str(tree.root),), entry="socket")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least 1"):
        PathGuard((str(tree.root),), max_components=0)


def test_must_exist_and_entry(tree: Tree) -> None:
    root = (str(tree.root),)
    assert codes(PathGuard(root, must_exist=True), tree.inside("nope")) == [
        GuardCode.PATH_NOT_FOUND
    ]
    assert PathGuard(root, must_exist=True).check(tree.inside("docs/readme.md")) == []
    as_file, as_dir = PathGuard(root, entry="file"), PathGuard(root, entry="dir")
    assert codes(as_file, tree.inside("docs")) == [GuardCode.PATH_WRONG_KIND]
    assert codes(as_dir, tree.inside("docs/readme.md")) == [GuardCode.PATH_WRONG_KIND]
    assert as_file.check(tree.inside("link_in/readme.md")) == []
    assert as_dir.check(tree.inside("link_in")) == []
    # A path to create is fine whatever it is to become.
    assert as_file.check(tree.inside("to-create.txt")) == []


@pytest.fixture
def restore_modes(tree: Tree) -> Iterator[list[Path]]:
    """Paths a test chmods; their modes are restored so the tree can be removed."""
    changed: list[Path] = []
    yield changed
    for path in changed:
        path.chmod(0o755)


def _bypasses_permissions(probe: Path, write: bool) -> bool:
    """Whether this process reads or writes despite mode bits (root, CAP_DAC_OVERRIDE): tried,
    not assumed, since that is what ``os.access`` answers for."""
    try:
        if write:
            (probe / "probe").touch()
            (probe / "probe").unlink()
        else:
            probe.read_bytes()
    except PermissionError:
        return False
    return True


def test_readable(tree: Tree, restore_modes: list[Path]) -> None:
    guard = PathGuard((str(tree.root),), readable=True)
    locked = tree.root / "locked.txt"
    locked.write_text("x")
    locked.chmod(0)
    restore_modes.append(locked)
    expected = [] if _bypasses_permissions(locked, write=False) else [GuardCode.PATH_NOT_READABLE]
    assert codes(guard, str(locked)) == expected
    assert check(guard, tree.inside("docs/readme.md")) == []
    assert check(guard, tree.inside("docs")) == []
    both = PathGuard((str(tree.root),), readable=True, must_exist=True)
    assert codes(both, tree.inside("nope")) == [GuardCode.PATH_NOT_FOUND]


def test_writable(tree: Tree, restore_modes: list[Path]) -> None:
    guard = PathGuard((str(tree.root),), writable=True)
    assert check(guard, tree.inside("docs/readme.md")) == []
    assert check(guard, tree.inside("brand/new/dirs/file.txt")) == []
    sealed = tree.root / "sealed"
    sealed.mkdir()
    sealed.chmod(0o555)
    restore_modes.append(sealed)
    expected = [] if _bypasses_permissions(sealed, write=True) else [GuardCode.PATH_NOT_WRITABLE]
    assert codes(guard, f"{sealed}/new.txt") == expected
    assert codes(guard, f"{sealed}/new/deeper.txt") == expected
    # Whoever runs this, nothing can be created below a regular file.
    assert codes(guard, tree.inside("file.txt/new.txt")) == [GuardCode.PATH_NOT_WRITABLE]


def test_the_guard_changes_nothing_on_disk(tree: Tree) -> None:
    def snapshot() -> list[tuple[str, int, int]]:
        return sorted(
            (str(path), path.lstat().st_mode, path.lstat().st_mtime_ns)
            for path in [tree.base, *tree.base.rglob("*")]
        )

    before = snapshot()
    guard = PathGuard((str(tree.root),), writable=True, readable=True, entry="file")
    for relative in [*BENIGN, "dangling_out", "dangling_dir_out/x", "brand/new.txt", "loop"]:
        guard.check(tree.inside(relative))
    assert snapshot() == before


def test_case_insensitive_filesystems_simulated(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No case-insensitive filesystem is assumed on the test machine: the walk's lstat and
    # readlink ignore case below the tree (whose names are lowercase), and the guard must
    # recognize the root by identity under any spelling.
    base = str(tree.base)

    def folded(path: str) -> str:
        return base + path[len(base) :].lower() if path.startswith(base + "/") else path

    guard = PathGuard((str(tree.root),))
    monkeypatch.setattr(path_module, "_lstat", lambda path: os.lstat(folded(path)))
    monkeypatch.setattr(path_module, "_readlink", lambda path: os.readlink(folded(path)))
    value = f"{tree.base}/DATA/Docs/readme.md"
    assert check(guard, value) == []
    assert guard.resolve(value) == f"{tree.root}/Docs/readme.md"
    assert codes(guard, f"{tree.base}/DATA_{SECRET.upper()}") == [GuardCode.PATH_OUTSIDE_ROOTS]
    assert codes(guard, f"{tree.base}/Data/../data_{SECRET}") == [GuardCode.PATH_OUTSIDE_ROOTS]
    assert codes(guard, f"{tree.base}/DATA/OUT_DIR") == [GuardCode.PATH_SYMLINK_ESCAPE]


def test_case_is_never_folded_by_name(tree: Tree) -> None:
    # On a case-sensitive filesystem DATA is another directory; on a case-insensitive one it
    # is the root. The guard must agree with the filesystem, whichever this one is.
    insensitive = (tree.base / "DATA").exists()
    if not insensitive:
        (tree.base / "DATA").mkdir()
    guard = PathGuard((str(tree.root),))
    expected = [] if insensitive else [GuardCode.PATH_OUTSIDE_ROOTS]
    assert codes(guard, f"{tree.base}/DATA/x") == expected
    # Folding by Unicode rules would make "ß" equal "ss"; no filesystem here does.
    (tree.base / "straße").mkdir()
    (tree.base / "strasse").mkdir()
    folded = PathGuard((str(tree.base / "strasse"),))
    assert codes(folded, f"{tree.base}/straße/x") == [GuardCode.PATH_OUTSIDE_ROOTS]


SEGMENTS = st.sampled_from(
    ["..", ".", "", "docs", "deep", "a", "link_in", "out_dir", "to_root", "chain1", "loop", "x"]
)


# The tree is only read, so sharing it between examples is sound.
@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(segments=st.lists(SEGMENTS, max_size=12))
def test_what_is_allowed_is_inside_read_by_the_kernel_and_by_normpath(
    guard: PathGuard, tree: Tree, segments: list[str]
) -> None:
    value = tree.inside("/".join(segments))
    resolved = guard.resolve(value)
    if resolved is None:
        return
    for reading in (os.path.realpath(value), os.path.realpath(os.path.normpath(value))):
        assert reading == str(tree.root) or reading.startswith(f"{tree.root}/"), value
    if os.path.exists(value):
        assert resolved == os.path.realpath(value)


@settings(max_examples=100)
@given(value=st.one_of(st.text(), st.lists(st.text()), st.integers(), st.none()))
def test_the_guard_never_raises(value: object) -> None:
    guard = PathGuard(("/",), allow_relative=True, allow_home=True, must_exist=True)
    assert all(isinstance(finding, GuardFinding) for finding in guard.check(value))


def test_guard_kind() -> None:
    assert PathGuard.kind == "path"
