"""`sam deploy`'s first step on the template's loops, for real: `sam package` of what `sam build` made,
uploading to a local S3 (moto). It must keep each Fn::ForEach for CloudFormation to expand and write
each function's uploaded code into a mapping (SAM CLI's language-extensions packaging, turned on by
samconfig.toml); and what CloudFormation then makes of the packaged template must be exactly what
sam_translate.py, which the snapshot and the version tests rely on, says it makes of template.yaml
with the same code: if SAM CLI's packaging and the harness's stand-in for it part, this fails.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from infra.emulators import Emulators

from . import rie
from .test_template import FUNCTIONS, STREAMING, _translate_args, translated

BUCKET = "momor-package"
"""sam_translate.py's bucket, so both translations name the same S3 objects."""


@pytest.mark.sam
@pytest.mark.timeout(900)
def test_sam_package_keeps_the_loops_and_cloudformation_gets_the_translated_stack(tmp_path):
    build = rie.sam_build()
    packaged = tmp_path / "packaged.yaml"
    with Emulators() as endpoints:
        s3 = endpoints.client("s3")
        s3.create_bucket(Bucket=BUCKET)
        done = subprocess.run(
            [rie.sam_executable(), "package", "--template-file", str(build.dir / "template.yaml"),
             "--s3-bucket", BUCKET, "--output-template-file", str(packaged),
             # What `sam build && sam deploy` from the repository reads (SAM CLI looks for the file
             # beside the template it was given, here the build's): language_extensions = true.
             "--config-file", str(rie.ROOT / "samconfig.toml")],
            cwd=rie.ROOT, env=rie.sam_env(endpoints.env()), capture_output=True, text=True, timeout=600,
            stdin=subprocess.DEVNULL)
        assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
        written = rie.load_template_as_written(packaged)
        _, names, _ = written["Resources"]["Fn::ForEach::StreamingFunctions"]
        assert sorted(f"{name}Function" for name in names) == sorted(STREAMING)
        uploaded = written["Mappings"]["SAMCodeUriStreamingFunctions"]
        assert sorted(uploaded) == sorted(names)
        stored = {o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])}
        for name in names:
            uri = uploaded[name]["CodeUri"]
            assert uri.startswith(f"s3://{BUCKET}/") and uri.removeprefix(f"s3://{BUCKET}/") in stored, uri

    done = subprocess.run(_translate_args(None, packaged, ("--packaged",)), capture_output=True, text=True,
                          timeout=300, env=rie.sam_env())
    assert done.returncode == 0, done.stderr[-3000:]
    deployed = json.loads(done.stdout)
    code = {logical_id: build.artifact(logical_id) for logical_id in [*FUNCTIONS, "MomorLayer", "DependenciesLayer"]}
    expected = translated(code=code)
    assert sorted(deployed["Resources"]) == sorted(expected["Resources"])
    changed = [k for k, v in expected["Resources"].items() if deployed["Resources"][k] != v]
    assert not changed, f"packaged by SAM CLI, these differ from sam_translate's reading: {changed}"
    assert deployed["Mappings"]["SAMCodeUriStreamingFunctions"] == expected["Mappings"]["SAMCodeUriStreamingFunctions"]
