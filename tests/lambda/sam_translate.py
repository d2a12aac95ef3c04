"""Print the CloudFormation a deployment makes of a template, offline.

    python sam_translate.py template.yaml [--code LogicalId=FOLDER]... [Name=Value]...

Run with SAM CLI's own interpreter (.sam-venv), whose samtranslator is what `sam deploy` uses. The
steps are CloudFormation's, in its order:
1. `sam package`: a local CodeUri/ContentUri becomes the S3 object it uploads, named after SAM CLI's
   checksum of the folder (samcli.lib.utils.hash.dir_checksum, what `sam package` names the zip
   after). `--code LogicalId=FOLDER` packages FOLDER for that resource; every other one gets a fixed
   placeholder URI, so its content cannot change the result.
2. AWS::LanguageExtensions, when the template lists it: SAM CLI's port of CloudFormation's own
   implementation (samcli.lib.cfn_language_extensions), which resolves parameter references in
   Resources to the given values (or the defaults).
3. AWS::Serverless-2016-10-31: samtranslator, with the same parameter values.
Managed policy names are not looked up (the template uses none), so no AWS account is asked anything.
"""

import json
import os
import sys

from samcli.lib.cfn_language_extensions.sam_integration import expand_language_extensions
from samcli.lib.utils.hash import dir_checksum
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

BUCKET = "momor-package"
PSEUDO = {"AWS::Region": "us-east-1", "AWS::Partition": "aws", "AWS::AccountId": "123456789012",
          "AWS::StackName": "momor"}


class NoManagedPolicies:
    def load(self) -> dict[str, str]:
        return {}


def package(template: dict, folders: dict[str, str]) -> None:
    """What `sam package` writes in place of local code locations."""
    for logical_id, resource in template.get("Resources", {}).items():
        properties = resource.get("Properties") or {}
        for key in ("CodeUri", "ContentUri"):
            if isinstance(properties.get(key), str):
                folder = folders.get(logical_id)
                name = dir_checksum(folder, followlinks=True) if folder else "placeholder"
                properties[key] = f"s3://{BUCKET}/{name}"


def translate(text: str, overrides: dict[str, str], folders: dict[str, str]) -> dict:
    template = yaml_parse(text)
    package(template, folders)
    parameters = {**PSEUDO, **overrides}
    template = expand_language_extensions(template, parameters, enabled=True).expanded_template
    return transform(template, parameters, NoManagedPolicies())


def main(argv: list[str]) -> None:
    os.environ.setdefault("AWS_DEFAULT_REGION", PSEUDO["AWS::Region"])
    path, rest = argv[0], argv[1:]
    folders, overrides = {}, {}
    while rest:
        arg = rest.pop(0)
        if arg == "--code":
            logical_id, _, folder = rest.pop(0).partition("=")
            folders[logical_id] = folder
        else:
            name, _, value = arg.partition("=")
            overrides[name] = value
    with open(path) as f:
        json.dump(translate(f.read(), overrides, folders), sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
