"""Print the CloudFormation SAM makes of a template, offline: `python sam_translate.py template.yaml [Name=Value]...`.

Run with SAM CLI's own interpreter (.sam-venv), whose samtranslator is what `sam deploy` uses.
Code locations become placeholder S3 URIs (what `sam package` would put there), and managed
policy names are not looked up (the template uses none), so no AWS account is asked anything.
"""

import json
import os
import sys

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse


class NoManagedPolicies:
    def load(self) -> dict[str, str]:
        return {}


def main(path: str, overrides: list[str]) -> None:
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    with open(path) as f:
        template = yaml_parse(f.read())
    for resource in template.get("Resources", {}).values():
        properties = resource.get("Properties") or {}
        for key in ("CodeUri", "ContentUri"):
            if isinstance(properties.get(key), str):
                properties[key] = "s3://momor-package/placeholder"
    parameters = {"AWS::Region": "us-east-1", **dict(o.split("=", 1) for o in overrides)}
    json.dump(transform(template, parameters, NoManagedPolicies()), sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
