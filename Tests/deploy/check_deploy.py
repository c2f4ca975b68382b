#!/usr/bin/env python3
"""The deployment files say what the release does: `make test` runs this after the fleet tests.

- deploy/kubernetes/imagekit.yaml is valid against the Kubernetes schema (kubernetes-validate,
  strict: an unknown field is an error), and its numbers fit together: the cache volume holds
  --disk-limit with room, /tmp is capped, the grace period covers the preStop pause and --grace,
  the image tag is the one the documented build line makes, the pod's uid is the image's.
- deploy/container/Dockerfile copies only this version's package, runs as a numeric user and
  stops with SIGTERM.
- deploy/debian/imagekit.default lists every option `imagekit serve` reads from the environment.

    python Tests/deploy/check_deploy.py --binary .build-test/release/imagekit
(with a python that has kubernetes-validate and PyYAML: the Makefile's deploy venv)
"""
import argparse
import os
import re
import subprocess
import sys
import unittest

import yaml
import kubernetes_validate

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MANIFEST = os.path.join(REPO, "deploy", "kubernetes", "imagekit.yaml")
DOCKERFILE = os.path.join(REPO, "deploy", "container", "Dockerfile")
DEFAULTS = os.path.join(REPO, "deploy", "debian", "imagekit.default")
BINARY = None


def read(path):
    with open(path, encoding="utf-8") as file:
        return file.read()


def version():
    match = re.search(r'static let version = "([^"]+)"', read(os.path.join(REPO, "Sources", "ImageKit", "ImageKit.swift")))
    return match.group(1)


def quantity_bytes(text):
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
    match = re.fullmatch(r"(\d+)(Ki|Mi|Gi)?", str(text))
    return int(match.group(1)) * units.get(match.group(2), 1)


class KubernetesExample(unittest.TestCase):
    def setUp(self):
        self.documents = [document for document in yaml.safe_load_all(read(MANIFEST)) if document]
        self.deployment = next(d for d in self.documents if d["kind"] == "Deployment")
        self.pod = self.deployment["spec"]["template"]["spec"]
        self.container = self.pod["containers"][0]
        self.args = self.container["args"]

    def option(self, name):
        return self.args[self.args.index(name) + 1] if name in self.args else None

    def test_valid_against_the_kubernetes_schema(self):
        for document in self.documents:
            with self.subTest(kind=document["kind"]):
                # Raises ValidationError (with the path of the bad field) when it does not conform.
                kubernetes_validate.validate(document, kubernetes_validate.latest_version(), strict=True)

    def test_the_cache_volume_holds_the_disk_limit_with_room(self):
        disk_limit = self.option("--disk-limit")
        self.assertIsNotNone(disk_limit, "--disk-limit: without it each cache may take 1 GiB")
        volumes = {volume["name"]: volume for volume in self.pod["volumes"]}
        mounts = {mount["mountPath"]: mount["name"] for mount in self.container["volumeMounts"]}
        cache = volumes[mounts["/var/cache/imagekit"]]["emptyDir"]["sizeLimit"]
        self.assertLessEqual(int(disk_limit) << 20, 0.8 * quantity_bytes(cache), "at most 80 % of the volume")
        self.assertIn("sizeLimit", volumes[mounts["/tmp"]]["emptyDir"], "/tmp needs a sizeLimit")

    def test_the_grace_period_covers_the_pause_and_the_drain(self):
        pause = self.container["lifecycle"]["preStop"]["exec"]["command"]
        self.assertEqual(pause[0], "/bin/sleep")
        grace = float(self.option("--grace") or 10)
        self.assertGreater(self.pod["terminationGracePeriodSeconds"], float(pause[1]) + grace)

    def test_the_image_is_the_one_the_build_line_makes(self):
        tag = f"imagekit:{version()}"
        self.assertEqual(self.container["image"], tag)
        self.assertIn(f"-t {tag} dist/", read(DOCKERFILE))
        self.assertIn(f"-t {tag} dist/", read(MANIFEST))

    def test_the_pod_runs_as_the_images_user(self):
        user = re.search(r"^USER (\d+):(\d+)$", read(DOCKERFILE), re.M)
        self.assertIsNotNone(user, "the Dockerfile's USER is numeric (uid:gid)")
        self.assertEqual(self.pod["securityContext"]["runAsUser"], int(user.group(1)))
        self.assertTrue(self.pod["securityContext"]["runAsNonRoot"])


class Dockerfile(unittest.TestCase):
    def test_copies_only_this_versions_package(self):
        text = read(DOCKERFILE)
        self.assertIn(f"ARG VERSION={version()}\n", text)
        self.assertRegex(text, r"(?m)^COPY imagekit_\$\{VERSION\}-1_\*\.deb /tmp/$")

    def test_stops_with_sigterm_and_says_how_long_to_wait(self):
        text = read(DOCKERFILE)
        self.assertRegex(text, r"(?m)^STOPSIGNAL SIGTERM$")
        self.assertIn("--stop-timeout", text)


class EnvironmentFile(unittest.TestCase):
    def test_lists_every_option_the_environment_sets(self):
        self.assertIsNotNone(BINARY, "--binary")
        help_text = subprocess.run([BINARY, "serve", "--help"], capture_output=True, text=True, check=True).stdout
        documented = set(re.findall(r"^#?(IMAGEKIT_SERVE_[A-Z0-9_]+)=", read(DEFAULTS), re.M))
        # Every --option of `serve --help` but the ones that make no sense in a unit's environment.
        options = set(re.findall(r"--(?:\[no-\])?([a-z][a-z0-9-]+)", help_text)) - {"help", "version"}
        options = {option for option in options if not (option.startswith("no-") and option[3:] in options)}
        for option in sorted(options):
            variable = "IMAGEKIT_SERVE_" + option.upper().replace("-", "_")
            with self.subTest(option=option):
                self.assertIn(variable, documented)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    arguments, rest = parser.parse_known_args()
    BINARY = os.path.abspath(arguments.binary)
    result = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors)
    print(f"check-deploy: {result.testsRun - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
