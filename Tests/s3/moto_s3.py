#!/usr/bin/env python3
"""An S3 API server for the tests: moto's standalone server on 127.0.0.1 with SigV4 checked.

Started by the Swift tests (S3SourceTests) with the thumbor venv's python, which `make test`
installs moto[server] into. It lets the first three calls through unauthenticated (IAM:
create a user, its access key, and an inline policy that lets it read and write S3), so every
later request, the tests' included, must carry a valid AWS Signature V4 of that key or gets
403 SignatureDoesNotMatch / InvalidAccessKeyId. It then creates the buckets named on the
command line with the new key and prints one JSON line:
    {"endpoint": "http://127.0.0.1:PORT", "key": "...", "secret": "...", "region": "us-east-1"}
Commands on standard input, one per line, answered with "ok" or "error: ...":
    put BUCKET KEY PATH      store the file at PATH as the object
    delete BUCKET KEY        remove the object
The server stops when standard input closes (the test ended or died).

    moto_s3.py BUCKET [BUCKET ...]
"""
import json
import logging
import os
import sys

os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = "3"
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

import boto3  # noqa: E402
from moto.server import ThreadedMotoServer  # noqa: E402

POLICY = json.dumps({
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": ["s3:*"], "Resource": "*"}],
})


def main():
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    buckets = sys.argv[1:]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    # The three calls let through without a signature.
    iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1",
                       aws_access_key_id="setup", aws_secret_access_key="setup")
    iam.create_user(UserName="imagekit")
    created = iam.create_access_key(UserName="imagekit")["AccessKey"]
    iam.put_user_policy(UserName="imagekit", PolicyName="s3", PolicyDocument=POLICY)
    key, secret = created["AccessKeyId"], created["SecretAccessKey"]
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                      aws_access_key_id=key, aws_secret_access_key=secret)
    for bucket in buckets:
        s3.create_bucket(Bucket=bucket)
    print(json.dumps({"endpoint": endpoint, "key": key, "secret": secret, "region": "us-east-1"}), flush=True)
    for line in sys.stdin:
        words = line.split()
        try:
            if words[:1] == ["put"] and len(words) == 4:
                with open(words[3], "rb") as f:
                    s3.put_object(Bucket=words[1], Key=words[2], Body=f.read())
            elif words[:1] == ["delete"] and len(words) == 3:
                s3.delete_object(Bucket=words[1], Key=words[2])
            else:
                raise ValueError(f"unknown command {line.strip()!r}")
            print("ok", flush=True)
        except Exception as error:  # reported to the test, which fails on it
            print(f"error: {error}", flush=True)
    server.stop()


if __name__ == "__main__":
    main()
