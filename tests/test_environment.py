"""requirements.txt (pip, make install) and environment.yml (conda, Binder) describe one environment."""
import pathlib

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]


def pins(lines):
    return sorted(line.strip() for line in lines if line.strip() and not line.strip().startswith("#"))


def test_environment_yml_pins_what_requirements_txt_pins():
    """The same versions; torch and torchvision as PyTorch's CPU builds, from PyTorch's CPU index."""
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(dep["pip"] for dep in env["dependencies"] if isinstance(dep, dict))
    assert pip_section[0] == "--extra-index-url https://download.pytorch.org/whl/cpu"
    cpu_builds = [line for line in pip_section[1:] if line.endswith("+cpu")]
    assert sorted(line.split("==")[0] for line in cpu_builds) == ["torch", "torchvision"]
    same = [line.removesuffix("+cpu") for line in pip_section[1:]]
    assert pins(same) == pins((ROOT / "requirements.txt").read_text().splitlines())
    assert "python=3.11" in env["dependencies"]


def test_every_requirement_is_pinned_and_torch_is_the_brief_s():
    requirements = pins((ROOT / "requirements.txt").read_text().splitlines())
    assert all("==" in line for line in requirements), requirements
    assert {"torch==2.14.1", "torchvision==0.29.1"} <= set(requirements)


def test_d2l_is_installed_without_its_pins_everywhere():
    assert pins((ROOT / "requirements-nodeps.txt").read_text().splitlines()) == ["d2l==1.0.3"]
    assert "--no-deps -r requirements-nodeps.txt" in (ROOT / "postBuild").read_text()
    assert "--no-deps -r requirements-nodeps.txt" in (ROOT / "Makefile").read_text()
