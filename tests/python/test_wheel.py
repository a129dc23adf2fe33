"""The wheel (python_api/wheel): built from what Bazel made, installed with
pip into a fresh virtual environment, it works outside Bazel:

* `import zerosbp` from another directory loads the installed package, its
  version the package's;
* zero-compile, zero-run, zero-checkpoint and zero-sim are on the
  environment's PATH and answer --help;
* the README's Python example runs with the environment's python, in
  threads and as four MPI ranks (python -m zerosbp.launch -n 4);
* the metadata holds the version, the licence and the four commands.

Every command runs with a timeout in a session of its own, killed whole if
it outlives it."""

import os
import re
import signal
import subprocess
import sys
import zipfile

import pytest

TOOLS = ["zero-compile", "zero-run", "zero-checkpoint", "zero-sim"]


def run(command, timeout=300, **kwargs):
    """(status, output) of `command`; fails the test if it hangs."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True,
                               start_new_session=True, **kwargs)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail("timed out after %d s: %s" % (timeout, command))
    return process.returncode, output


def readme_example():
    """The README's first Python example: the training graph."""
    with open("README.md") as f:
        text = f.read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "README.md has no Python example"
    return blocks[0]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(wheel, the environment's bin directory, a clean environment)."""
    work = tmp_path_factory.mktemp("wheel")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(work),
           "TMPDIR": str(work), "RUNFILES_DIR": os.path.dirname(os.getcwd())}
    status, output = run(["bash", "python_api/wheel/build_wheel.sh",
                          str(work / "dist")], env=env)
    assert status == 0, output
    wheel = output.strip().splitlines()[-1]
    assert re.search(r"/zerosbp-[0-9.]+-cp311-cp311-linux_x86_64\.whl$",
                     wheel), wheel
    venv = work / "env"
    status, output = run(["/usr/bin/python3", "-m", "venv",
                          "--system-site-packages", str(venv)], env=env)
    assert status == 0, output
    status, output = run([str(venv / "bin" / "pip"), "install", "--no-index",
                          "--disable-pip-version-check", wheel], env=env)
    assert status == 0, output
    clean = dict(env, PATH="%s:/usr/bin:/bin" % (venv / "bin"))
    return wheel, venv / "bin", clean


def test_import_outside_bazel(installed, tmp_path):
    _, bin_dir, env = installed
    status, output = run([str(bin_dir / "python"), "-c",
                          "import zerosbp; print(zerosbp.__file__); "
                          "print(zerosbp.__version__)"],
                         cwd=tmp_path, env=env)
    assert status == 0, output
    where, version = output.split()
    assert where.startswith(str(bin_dir.parent)), where
    assert "site-packages" in where
    sys.path.insert(0, "python_api")
    import zerosbp
    assert version == zerosbp.__version__


@pytest.mark.parametrize("tool", TOOLS)
def test_tools_on_path(installed, tool, tmp_path):
    _, bin_dir, env = installed
    status, output = run([tool, "--help"], cwd=tmp_path, env=env)
    assert status == 0, output
    assert tool in output, output[:300]


def test_metadata(installed):
    wheel, _, _ = installed
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = archive.read(info[0]).decode()
        points = archive.read(info[0].replace("METADATA",
                                              "entry_points.txt")).decode()
    assert re.search(r"^License: Apache-2.0$", metadata, re.M), metadata
    assert re.search(r"^Version: [0-9]+\.[0-9]+\.[0-9]+$", metadata, re.M)
    assert any(n.endswith(".dist-info/LICENSE") for n in names)
    for tool in TOOLS:
        assert "zerosbp/bin/" + tool in names
        assert tool + " = zerosbp._tools:" in points
    assert "zerosbp/_zerosbp.so" in names


def test_readme_example_in_threads(installed, tmp_path):
    _, bin_dir, env = installed
    (tmp_path / "train.py").write_text(readme_example())
    status, output = run([str(bin_dir / "python"), "train.py"],
                         cwd=tmp_path, env=env)
    assert status == 0, output[-2000:]
    assert "sbp.placement" in output or "#sbp" in output, output[:500]
    assert (tmp_path / "step.json").is_file()
    assert (tmp_path / "mlp.safetensors").is_file()


def test_readme_example_over_mpi(installed, tmp_path):
    _, bin_dir, env = installed
    (tmp_path / "train.py").write_text(readme_example())
    status, output = run([str(bin_dir / "python"), "-m", "zerosbp.launch",
                          "-n", "4", "train.py"], timeout=240,
                         cwd=tmp_path, env=env)
    assert status == 0, output[-2000:]
    assert (tmp_path / "mlp.safetensors").is_file()
