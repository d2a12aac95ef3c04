"""Print the CloudFormation a deployment makes of a template, offline.

    python sam_translate.py template.yaml [--code LogicalId=FOLDER]... [--only-its-own-functions]
                            [--language-extensions-only] [--packaged] [--batch] [Name=Value]...

Run with SAM CLI's own interpreter (.sam-venv), whose samtranslator is what `sam deploy` uses. The
steps are CloudFormation's, in its order:
1. `sam package`: a local CodeUri/ContentUri becomes the S3 object it uploads, named after SAM CLI's
   checksum of the folder (samcli.lib.utils.hash.dir_checksum, what `sam package` names the zip
   after). `--code LogicalId=FOLDER` packages FOLDER for that resource; every other one gets a fixed
   placeholder URI, so its content cannot change the result.
2. AWS::LanguageExtensions, when the template lists it: SAM CLI's port of CloudFormation's own
   implementation (samcli.lib.cfn_language_extensions), which expands Fn::ForEach and resolves every
   intrinsic function it can in Resources and Outputs, parameter references included, to the given
   values (or the defaults).
   With --only-its-own-functions, it resolves only what the transform's documentation says it
   resolves (transform-aws-languageextensions: "updates any intrinsic function defined by the
   transform to its resolved value"): Fn::ForEach, Fn::ToJsonString, Fn::Length, Fn::FindInMap and a
   Ref or Fn::GetAtt of a computed target (_its_own), their arguments included; every other Ref,
   Fn::Sub, Fn::If... is left for CloudFormation to resolve after the transforms, as SAM alone sees
   it (serverless-application-model issue 3820: the version's hash is then taken over
   `{"Ref": "LogLevel"}`, whatever its value). Whether
   the hosted transform resolves more than that is not documented; a template that publishes new
   versions under both readings does not depend on it.
3. AWS::Serverless-2016-10-31: samtranslator, with the same parameter values (SAM resolves a few
   parameter references itself: AutoPublishAlias, AutoPublishCodeSha256, CodeUri in a version's hash).
   --language-extensions-only stops before it and prints what SAM is given.
With --packaged, step 1 is skipped: the template is what `sam package` wrote (its code already in S3).
With --batch, each line of stdin is a JSON object of overrides and one JSON result is printed per line
(one interpreter for many translations). Managed policy names are not looked up (the template uses
none), so no AWS account is asked anything.
"""

import copy
import json
import os
import sys

from samcli.lib.cfn_language_extensions.api import create_default_pipeline
from samcli.lib.cfn_language_extensions.models import PseudoParameterValues, ResolutionMode, TemplateProcessingContext
from samcli.lib.cfn_language_extensions.processors import ForEachProcessor
from samcli.lib.cfn_language_extensions.sam_integration import check_using_language_extension
from samcli.lib.utils.hash import dir_checksum
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

BUCKET = "momor-package"
PSEUDO = {"AWS::Region": "us-east-1", "AWS::Partition": "aws", "AWS::AccountId": "123456789012",
          "AWS::StackName": "momor"}
ITS_OWN = ("Fn::ToJsonString", "Fn::Length")
"""Functions only the transform defines (Fn::ForEach is expanded before KeepNative runs)."""


class NoManagedPolicies:
    def load(self) -> dict[str, str]:
        return {}


def _resources(section: dict):
    """(logical id, resource) of a Resources section, those an Fn::ForEach writes out included (named
    as written, `${Name}Function`)."""
    for logical_id, resource in section.items():
        if logical_id.startswith("Fn::ForEach::") and isinstance(resource, list) and len(resource) == 3:
            yield from _resources(resource[2])
        elif isinstance(resource, dict):
            yield logical_id, resource


def _uploaded(logical_id: str, folders: dict[str, str]) -> str:
    folder = folders.get(logical_id)
    name = dir_checksum(folder, followlinks=True) if folder else "placeholder"
    return f"s3://{BUCKET}/{name}"


def package(template: dict, folders: dict[str, str]) -> None:
    """What `sam package` writes in place of local code locations. A code location an Fn::ForEach
    body reads from Mappings per item (`!FindInMap [Map, !Ref Name, Key]`) becomes, as SAM CLI writes
    it with language extensions on, `!FindInMap [SAMCodeUri<Loop>, !Ref Name, CodeUri]` over a mapping
    of each item's uploaded location (samcli.lib.package.language_extensions_packaging)."""
    resources = template.get("Resources", {})
    for logical_id, resource in _resources(resources):
        properties = resource.get("Properties") or {}
        for key in ("CodeUri", "ContentUri"):
            if isinstance(properties.get(key), str):
                properties[key] = _uploaded(logical_id, folders)
    for loop, value in resources.items():
        if not (loop.startswith("Fn::ForEach::") and isinstance(value, list) and len(value) == 3):
            continue
        identifier, items, body = value
        for written_as, resource in body.items():
            properties = resource.get("Properties") or {}
            found = properties.get("CodeUri")
            if not (isinstance(found, dict) and "Fn::FindInMap" in found):
                continue
            assert found["Fn::FindInMap"][1] == {"Ref": identifier}, found
            mapping = f"SAMCodeUri{loop.removeprefix('Fn::ForEach::')}"
            template.setdefault("Mappings", {})[mapping] = {
                item: {"CodeUri": _uploaded(written_as.replace(f"${{{identifier}}}", item), folders)}
                for item in items}
            properties["CodeUri"] = {"Fn::FindInMap": [mapping, {"Ref": identifier}, "CodeUri"]}


def _its_own(value: dict) -> bool:
    """Whether the transform resolves `value` itself. Fn::FindInMap: every one, not only those with
    a DefaultValue: `sam package` writes a loop's code location as `!FindInMap [SAMCodeUri<Loop>,
    !Ref Name, CodeUri]` (package() above), which SAM, running after the transform, can read only
    as the S3 URI it stands for. A Ref or Fn::GetAtt whose target is itself a function (`Ref: !Sub
    "${Name}FunctionLogs"` in a loop) is the transform's too: "you can use intrinsic functions as a
    parameter to Ref and Fn::GetAtt" is a feature of the transform, which CloudFormation alone lacks."""
    (name, arg), = value.items()
    if name == "Fn::FindInMap":
        return True
    if name == "Ref":
        return isinstance(arg, dict)
    if name == "Fn::GetAtt":
        return isinstance(arg, list) and any(isinstance(a, dict) for a in arg)
    return name in ITS_OWN


class KeepNative:
    """Hides every intrinsic function the transform does not define (outside those it does) behind a
    token while the port resolves, then puts it back: --only-its-own-functions. Runs after Fn::ForEach
    is expanded, so a loop's own identifiers are already substituted."""

    def __init__(self) -> None:
        self.kept: dict[str, dict] = {}

    def process_template(self, context: TemplateProcessingContext) -> None:
        fragment = context.fragment
        for resource in (fragment.get("Resources") or {}).values():
            if isinstance(resource, dict) and "Properties" in resource:
                resource["Properties"] = self._hide(resource["Properties"])
        if "Outputs" in fragment:
            fragment["Outputs"] = self._hide(fragment["Outputs"])

    def _hide(self, value):
        if isinstance(value, dict):
            if len(value) == 1 and (next(iter(value)) == "Ref" or next(iter(value)).startswith("Fn::")):
                if _its_own(value):
                    return value  # resolved by the transform, its arguments included
                token = f"momor-kept-intrinsic-{len(self.kept)}"
                self.kept[token] = value
                return token
            return {k: self._hide(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._hide(v) for v in value]
        return value

    def restore(self, value):
        if isinstance(value, str):
            return copy.deepcopy(self.kept.get(value, value))
        if isinstance(value, dict):
            return {k: self.restore(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.restore(v) for v in value]
        return value


def language_extensions(template: dict, parameters: dict[str, str], only_its_own: bool) -> dict:
    """The port's pipeline, as SAM CLI runs it (process_template_for_sam_cli), KeepNative spliced in
    after Fn::ForEach's expansion when only the transform's own functions are to be resolved."""
    if not check_using_language_extension(template):
        return template
    pseudo = PseudoParameterValues(region=PSEUDO["AWS::Region"], account_id=PSEUDO["AWS::AccountId"],
                                   stack_name=PSEUDO["AWS::StackName"], partition=PSEUDO["AWS::Partition"])
    context = TemplateProcessingContext(fragment=copy.deepcopy(template), parameter_values=parameters,
                                        pseudo_parameters=pseudo, resolution_mode=ResolutionMode.PARTIAL)
    processors = create_default_pipeline(context).processors
    keep = KeepNative()
    if only_its_own:
        at = next(i for i, p in enumerate(processors) if isinstance(p, ForEachProcessor)) + 1
        processors.insert(at, keep)
    for processor in processors:
        processor.process_template(context)
    return keep.restore(context.fragment)


def translate(text: str, overrides: dict[str, str], folders: dict[str, str], *, only_its_own: bool = False,
              stop_before_sam: bool = False, packaged: bool = False) -> dict:
    template = yaml_parse(text)
    if not packaged:
        package(template, folders)
    parameters = {**PSEUDO, **overrides}
    template = language_extensions(template, parameters, only_its_own)
    if stop_before_sam:
        return template
    return transform(template, parameters, NoManagedPolicies())


def main(argv: list[str]) -> None:
    os.environ.setdefault("AWS_DEFAULT_REGION", PSEUDO["AWS::Region"])
    path, rest = argv[0], argv[1:]
    folders, overrides, flags = {}, {}, set()
    while rest:
        arg = rest.pop(0)
        if arg == "--code":
            logical_id, _, folder = rest.pop(0).partition("=")
            folders[logical_id] = folder
        elif arg.startswith("--"):
            flags.add(arg)
        else:
            name, _, value = arg.partition("=")
            overrides[name] = value
    unknown = flags - {"--only-its-own-functions", "--language-extensions-only", "--batch", "--packaged"}
    if unknown:
        raise SystemExit(f"unknown options {sorted(unknown)}")
    with open(path) as f:
        text = f.read()
    options = {"only_its_own": "--only-its-own-functions" in flags,
               "stop_before_sam": "--language-extensions-only" in flags, "packaged": "--packaged" in flags}
    if "--batch" not in flags:
        json.dump(translate(text, overrides, folders, **options), sys.stdout)
        return
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(translate(text, {**overrides, **json.loads(line)}, folders, **options)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
