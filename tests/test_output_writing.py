"""Every file the alm-* tools write (alm-cache-grid --json, alm-cache-posterior --json / --plot,
alm-plot-attention --out, alm-rescore --output-1best / --output-nbest) goes to a temporary file of a
unique name beside it and is renamed into place (alm_plugin/cli/output_files.py): a link there, hard or
symbolic, to a file of another data directory or another corpus is replaced, never written through;
what it pointed at keeps its bytes. A link to another model's checkpoint is refused before the run.

Before: the JSON and the pictures were opened and written where they stood, so `ln
other/valid.bin out.json; alm-cache-grid ... --json out.json` put the grid into other/valid.bin, rc 0,
and a symbolic link onto another model's checkpoint overwrote the checkpoint; alm-rescore renamed
a temporary file, but of a fixed name (out.partial), and a link planted there was written through."""

import hashlib
import json
import os
import shutil
import stat

import pytest
from cli import last_line, refused, run_module
from conftest import SAMPLE_DATA, short_split

NBEST = (
    "H-0\t-1.5\tthe cat sat\nP-0\t-0.5 -0.5 -0.25 -0.25\nH-0\t-2.0\ta cat\nP-0\t-1.0 -0.5 -0.5\n"
    "H-1\t-0.5\tthe dog\nP-1\t-0.25 -0.25 -0.25\n"
)

# (id, module, prog, output option, the model it reads, what the output holds)
OUTPUTS = [
    ("cache-grid-json", "alm_plugin.cli.cache_grid", "alm-cache-grid", "--json", "tiny_attentive", "json"),
    ("cache-posterior-json", "alm_plugin.cli.cache_posterior", "alm-cache-posterior", "--json", "tiny_pointer", "json"),
    ("cache-posterior-plot", "alm_plugin.cli.cache_posterior", "alm-cache-posterior", "--plot", "tiny_pointer", "png"),
    ("plot-attention-out", "alm_plugin.cli.plot_attention", "alm-plot-attention", "--out", "tiny_attentive", "png"),
    ("rescore-1best", "alm_plugin.cli.rescore", "alm-rescore", "--output-1best", "tiny_attentive", "text"),
    ("rescore-nbest", "alm_plugin.cli.rescore", "alm-rescore", "--output-nbest", "tiny_attentive", "text"),
]


@pytest.fixture(scope="module")
def short_data(tmp_path_factory):
    """A data directory of the sample's dictionary and its valid split's first 20 lines: what the
    cache tools read here (the whole split would only take longer to write the same files)."""
    return short_split(tmp_path_factory.mktemp("short") / "data", 20)


def command(module, option, checkpoint, output, folder, data=None):
    """The tool's arguments writing ``output`` with ``option`` from ``checkpoint`` (the cache tools
    reading ``data``'s valid split where given, else the data directory saved in the checkpoint)."""
    read = ["--data", data] if data else []
    if module.endswith("cache_grid"):
        return ["--path", checkpoint, *read, "--windows", "10", "--thetas", "0.3", "--lambdas", "0.1", option, output]
    if module.endswith("cache_posterior"):
        return [
            "--path",
            checkpoint,
            *read,
            "--gen-subset",
            "valid",
            "--top",
            "2",
            "--plot-words",
            "10",
            option,
            output,
        ]
    if module.endswith("plot_attention"):
        return ["--path", checkpoint, option, output, "the cat sat"]
    nbest = folder / "in.nbest"
    nbest.write_text(NBEST, encoding="utf-8")
    return ["--nbest", nbest, "--lm", checkpoint, "--hyp-form", "tok", "--lm-form", "tok", "--cpu", option, output]


def sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def fingerprints(folder):
    return {name: sha(os.path.join(folder, name)) for name in sorted(os.listdir(folder))}


def holds(path, kind):
    data = open(path, "rb").read()
    if kind == "json":
        return isinstance(json.loads(data), dict)
    if kind == "png":
        return data.startswith(b"\x89PNG\r\n\x1a\n")
    return data.decode("utf-8").startswith(("0 ||| ", "the cat sat", "a cat"))


def other_files(tmp_path):
    """Files a link may name: another data directory, another corpus's raw text, another model's checkpoint."""
    other = tmp_path / "other-data"
    shutil.copytree(SAMPLE_DATA, other)
    corpus = tmp_path / "other-corpus"
    corpus.mkdir()
    (corpus / "train.txt").write_text("the cat sat on the mat .\n" * 20, encoding="utf-8")
    return other, corpus


LINKS = {  # link kind -> (the file it names, given the folders above and another model's checkpoint)
    "hard link into another data directory": ("hard", lambda other, corpus, ckpt: other / "valid.bin"),
    "hard link to another corpus's text": ("hard", lambda other, corpus, ckpt: corpus / "train.txt"),
    "symbolic link to another corpus's text": ("symbolic", lambda other, corpus, ckpt: corpus / "train.txt"),
    "hard link onto another model's checkpoint": ("hard", lambda other, corpus, ckpt: ckpt),
    "symbolic link onto another model's checkpoint": ("symbolic", lambda other, corpus, ckpt: ckpt),
}


REFUSED_LINKS = [link for link in LINKS if "checkpoint" in link]  # refused before the run
WRITTEN_LINKS = [link for link in LINKS if link not in REFUSED_LINKS]  # replaced by the tool's run
# Every output option is written through one link of the kinds a run replaces, each kind through
# several tools (they all write through output_files.output_file: write_json, save_figure and the
# n-best writer), and alm-rescore's --output-1best, the cheapest run, through every kind; every
# output option meets every link onto a checkpoint (a refusal before the run, no model read).
WRITTEN_THROUGH = {
    "cache-grid-json": [WRITTEN_LINKS[0]],
    "cache-posterior-json": [WRITTEN_LINKS[1]],
    "cache-posterior-plot": [WRITTEN_LINKS[2]],
    "plot-attention-out": [WRITTEN_LINKS[0]],
    "rescore-1best": WRITTEN_LINKS,
    "rescore-nbest": [WRITTEN_LINKS[2]],
}
CASES = [
    pytest.param(link, *output, id=f"{output[0]}-{link}")
    for output in OUTPUTS
    for link in [*WRITTEN_THROUGH[output[0]], *REFUSED_LINKS]
]


@pytest.mark.parametrize("link, name, module, prog, option, model, kind", CASES)
def test_an_output_that_is_a_link_is_replaced_never_written_through(
    request, tmp_path, short_data, name, module, prog, option, model, kind, link
):
    checkpoint, _ = request.getfixturevalue(model)
    other, corpus = other_files(tmp_path)
    another_model = tmp_path / "another-model" / "checkpoint_best.pt"
    another_model.parent.mkdir()
    shutil.copy(checkpoint, another_model)  # a copy: the session's checkpoint is never at stake
    how, target = LINKS[link]
    target = target(other, corpus, another_model)
    before = {folder: fingerprints(folder) for folder in (other, corpus, another_model.parent)}
    out = tmp_path / "out" / ("out.png" if kind == "png" else "out.json" if kind == "json" else "out.txt")
    out.parent.mkdir()
    os.link(target, out) if how == "hard" else out.symlink_to(target)
    code, stdout, stderr = run_module(module, *command(module, option, checkpoint, out, tmp_path, short_data))
    if target == another_model:  # a checkpoint is no output, whatever its name: refused before the run
        assert code == 1 and refused(stderr, prog, f"{option} {out}") and "is a checkpoint" in stderr, stderr
        assert {folder: fingerprints(folder) for folder in before} == before
        assert os.path.samefile(out, another_model)
        return
    assert code == 0, stderr
    assert {folder: fingerprints(folder) for folder in before} == before  # the linked file kept its bytes
    assert not out.is_symlink() and os.stat(out).st_nlink == 1 and holds(out, kind)
    assert os.listdir(out.parent) == [out.name]  # no temporary file left


def test_a_link_planted_at_the_old_temporary_name_is_left_alone(tiny_attentive, tmp_path):
    """A hard link planted at ``{output}.partial`` is left alone: the 1-best does not reach the file it shares."""
    checkpoint, _ = tiny_attentive
    other, _ = other_files(tmp_path)
    before = fingerprints(other)
    out = tmp_path / "out" / "best.txt"
    out.parent.mkdir()
    for option in ("--output-1best", "--output-nbest"):
        os.link(other / "valid.bin", f"{out}.partial")
        code, _, stderr = run_module("alm_plugin.cli.rescore", *command("rescore", option, checkpoint, out, tmp_path))
        assert code == 0, stderr
        assert fingerprints(other) == before and holds(out, "text")
        os.unlink(f"{out}.partial")


@pytest.mark.parametrize("name, module, prog, option, model, kind", OUTPUTS, ids=[o[0] for o in OUTPUTS])
def test_an_output_naming_the_checkpoint_read_is_still_refused(
    request, tmp_path, name, module, prog, option, model, kind
):
    """The refusal of an output that is an input stays (a hard link to --path / --lm: its inode)."""
    checkpoint, _ = request.getfixturevalue(model)
    ours = tmp_path / "model.pt"
    shutil.copy(checkpoint, ours)
    before = sha(ours)
    out = tmp_path / ("out.png" if kind == "png" else "out.json")
    os.link(ours, out)
    code, stdout, stderr = run_module(module, *command(module, option, ours, out, tmp_path))
    read_as = "--lm" if module.endswith("rescore") else "--path"
    assert code == 1 and refused(stderr, prog, f"{option} {out} is also {read_as}")
    assert sha(ours) == before


def test_a_symbolic_link_into_another_data_directory_is_refused(tiny_attentive, tmp_path):
    """A folder holding a dict*.txt is a data directory, whichever: refused by name as before."""
    checkpoint, _ = tiny_attentive
    other, _ = other_files(tmp_path)
    before = fingerprints(other)
    out = tmp_path / "grid.json"
    out.symlink_to(other / "valid.idx")
    code, _, stderr = run_module(
        "alm_plugin.cli.cache_grid", *command("cache_grid", "--json", checkpoint, out, tmp_path)
    )
    assert code == 1 and refused(
        stderr,
        "alm-cache-grid",
        f"--json {out} is a link to {other / 'valid.idx'}, a file of the data directory {other}",
    )
    assert fingerprints(other) == before


# ---------------------------------------------------------------- the helper itself


def test_the_helper_writes_through_a_temporary_name_and_cleans_up_after_a_failure(tmp_path):
    from alm_plugin.cli.output_files import output_file, write_json

    path = tmp_path / "record.json"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with output_file(path) as handle:
            handle.write("half")
            assert sorted(os.listdir(tmp_path))[0].startswith(".record.json.")  # beside it, a unique name
            raise RuntimeError("the run failed")
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["record.json"]
    write_json(path, {"ppl": 1.5})
    assert json.loads(path.read_text()) == {"ppl": 1.5} and os.listdir(tmp_path) == ["record.json"]
    umask = os.umask(0o022)
    try:
        write_json(tmp_path / "new.json", {})
    finally:
        os.umask(umask)
    assert stat.S_IMODE(os.stat(tmp_path / "new.json").st_mode) == 0o644  # as open(path, "w") would make it


# ------------------------------------------------------- an output inside the data directory the model reads, refused


def data_copy(folder):
    """A copy of the shipped sample (a test that failed would destroy its own copy, never the sample)."""
    shutil.copytree(SAMPLE_DATA, folder)
    return folder


LINKED = [  # (module, prog, output option, the data file its link names, extra arguments)
    ("alm_plugin.cli.cache_posterior", "alm-cache-posterior", "--json", "dict.txt", ["--gen-subset", "valid"]),
    ("alm_plugin.cli.cache_posterior", "alm-cache-posterior", "--plot", "valid.bin", ["--gen-subset", "valid"]),
    (
        "alm_plugin.cli.cache_grid",
        "alm-cache-grid",
        "--json",
        "valid.idx",
        ["--windows", "10", "--thetas", "0.3", "--lambdas", "0.1"],
    ),
    ("alm_plugin.cli.plot_attention", "alm-plot-attention", "--out", "test.bin", ["the cat"]),
]


@pytest.mark.parametrize("module, prog, option, target, extra", LINKED)
def test_an_output_linked_into_the_data_directory_is_refused_and_nothing_is_written(
    tiny_pointer, tmp_path, module, prog, option, target, extra
):
    """An output that is a link into a data directory (its dict.txt, a split's .idx) is refused, nothing written
    through it."""
    checkpoint, _ = tiny_pointer
    data = data_copy(tmp_path / "data")
    before = fingerprints(data)
    link = tmp_path / ("out.png" if option in ("--plot", "--out") else "out.json")
    link.symlink_to(data / target)
    code, stdout, stderr = run_module(module, "--path", checkpoint, "--data", data, option, link, *extra)
    assert code == 1 and refused(
        stderr,
        prog,
        f"{option} {link} is a link to {data / target}, a file of the data "
        f"directory {data} (the data the model reads): writing it would "
        "destroy the data; give another path",
    )
    assert fingerprints(data) == before and link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", link.name]


def test_a_link_through_a_linked_folder_a_chain_and_a_hard_link_are_refused_too(tiny_pointer, tmp_path):
    checkpoint, _ = tiny_pointer
    data = data_copy(tmp_path / "data")
    before = fingerprints(data)
    (tmp_path / "folder").symlink_to(data)  # folder/valid.idx is data/valid.idx
    (tmp_path / "first.json").symlink_to(data / "dict.txt")
    (tmp_path / "chain.json").symlink_to(tmp_path / "first.json")
    os.link(data / "valid.bin", tmp_path / "hard.json")  # the same inode: found through --data
    grid = ["--windows", "10", "--thetas", "0.3", "--lambdas", "0.1", "--data", data]
    for output, says in (
        (tmp_path / "folder" / "valid.idx", "is a file of the data directory"),
        (tmp_path / "chain.json", f"is a link to {data / 'dict.txt'}, a file of the data directory"),
        (tmp_path / "hard.json", "is a file of the data directory"),
    ):
        code, _, stderr = run_module("alm_plugin.cli.cache_grid", "--path", checkpoint, *grid, "--json", output)
        assert code == 1 and refused(stderr, "alm-cache-grid", f"--json {output} {says}"), output
    assert fingerprints(data) == before


def test_an_output_in_the_checkpoints_saved_data_directory_is_refused_without_data(tiny_pointer, tmp_path):
    """No --data: the data directory saved in the checkpoint is the one protected."""
    checkpoint, data = tiny_pointer
    before = fingerprints(data)
    link = tmp_path / "out.json"
    link.symlink_to(data / "test.idx")
    code, _, stderr = run_module("alm_plugin.cli.cache_posterior", "--path", checkpoint, "--json", link)
    assert code == 1 and refused(stderr, "alm-cache-posterior", f"--json {link} is a link to {data / 'test.idx'}")
    assert fingerprints(data) == before


# ---------------------------------------------------------- an output on an input, or in a folder that does not exist


@pytest.mark.parametrize(
    "module, prog, option, extra",
    [
        ("alm_plugin.cli.plot_attention", "alm-plot-attention", "--out", ["the cat"]),
        ("alm_plugin.cli.cache_posterior", "alm-cache-posterior", "--plot", []),
        ("alm_plugin.cli.cache_grid", "alm-cache-grid", "--json", []),
    ],
)
def test_every_tool_refuses_an_output_in_a_missing_folder_before_loading(tmp_path, module, prog, option, extra):
    """The checkpoint is never read (it does not exist): the output is checked first, not after the run."""
    out = tmp_path / "no" / "such" / "folder" / "out.png"
    code, stdout, stderr = run_module(module, "--path", tmp_path / "never-loaded.pt", option, out, *extra)
    assert code == 1 and "Traceback" not in stderr, stderr
    assert last_line(stderr) == (
        f"{prog}: error: {option} {out}: the folder {out.parent} does not exist; create it or give another path"
    ), stderr


def test_cache_posterior_json_on_its_checkpoint_or_its_plot_is_refused(tmp_path, tiny_lm):
    """--json naming the checkpoint (under another spelling) or the --plot file: one line, nothing written."""
    checkpoint = tmp_path / "lm.pt"
    checkpoint.write_bytes(tiny_lm.read_bytes())
    for json_out, extra, clash in (
        (os.path.join(tmp_path, ".", "lm.pt"), [], "--path"),
        (tmp_path / "out.png", ["--plot", tmp_path / "out.png"], "--plot"),
    ):
        code, stdout, stderr = run_module(
            "alm_plugin.cli.cache_posterior", "--path", checkpoint, *extra, "--json", json_out
        )
        assert code == 1 and stdout == "" and f"--json {json_out} is also {clash}" in last_line(stderr), stderr
    assert checkpoint.read_bytes() == tiny_lm.read_bytes() and sorted(os.listdir(tmp_path)) == ["lm.pt"]


# ---------------------------------------------------------------- the file written is the one printed


def test_plot_without_an_extension_prints_the_file_it_wrote(tiny_pointer, tmp_path, short_data):
    """`--plot noext` writes noext.png (matplotlib adds it) and prints that name."""
    checkpoint, data = tiny_pointer
    code, stdout, stderr = run_module(
        "alm_plugin.cli.cache_posterior",
        "--path",
        checkpoint,
        "--data",
        short_data,
        "--gen-subset",
        "valid",
        "--plot",
        tmp_path / "noext",
        "--plot-words",
        "20",
    )
    assert code == 0, stderr
    assert stdout.strip().splitlines()[-1] == f"wrote {tmp_path / 'noext.png'}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["noext.png"]


def test_alm_rescore_refuses_a_hard_link_into_the_checkpoints_data_directory(tiny_attentive, tmp_path):
    """Without --lm-data the data directory saved in the checkpoint is protected, as alm-cache-grid
    protects it. Before: a hard link to its dict.txt was accepted as --output-1best."""
    checkpoint, data = tiny_attentive
    before = fingerprints(data)
    out = tmp_path / "best.txt"
    os.link(data / "dict.txt", out)
    code, _, stderr = run_module(
        "alm_plugin.cli.rescore", *command("rescore", "--output-1best", checkpoint, out, tmp_path)
    )
    assert code == 1 and refused(
        stderr, "alm-rescore", f"--output-1best {out} is a file of the data directory {data} (the data the model reads)"
    )
    assert fingerprints(data) == before


def test_a_fifo_output_gets_the_record_and_stays_a_fifo(tiny_attentive, tmp_path, short_data):
    """A FIFO given as --json gets the record and stays a FIFO (not replaced by a regular file)."""
    import threading

    checkpoint, _ = tiny_attentive
    fifo = tmp_path / "grid.json"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, encoding="utf-8").read()), daemon=True)
    reader.start()
    code, _, stderr = run_module(
        "alm_plugin.cli.cache_grid", *command("cache_grid", "--json", checkpoint, fifo, tmp_path, short_data)
    )
    reader.join(30)
    assert code == 0, stderr
    assert isinstance(json.loads(got[0]), dict) and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["grid.json"]
