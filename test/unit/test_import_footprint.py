"""What okra-manager's process imports before it does any work: neither kubernetes_asyncio's
generated API and model modules nor aiobotocore (imported with the first AWS client). A fresh
interpreter, since what is checked is what a process imports."""

from __future__ import annotations

import json
import subprocess
import sys


def test_manager_import_leaves_generated_kubernetes_classes_and_aiobotocore_out() -> None:
    code = """
import json, sys
import okra_controllers.manager
import okra_controllers.registry
print(json.dumps(sorted(
    m for m in sys.modules
    if m.startswith(("aiobotocore", "kubernetes_asyncio.client.models.",
                     "kubernetes_asyncio.client.api."))
)))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def test_the_first_aws_client_imports_aiobotocore() -> None:
    code = """
import json, sys
from okra_controllers.aws.config import AwsConfig, shared_session
before = "aiobotocore.session" in sys.modules
kwargs = AwsConfig(region="eu-west-1", total_max_attempts=3)._client_kwargs()
session = shared_session()
print(json.dumps({
    "before": before,
    "session": type(session).__name__,
    "retries": kwargs["config"].retries,
    "region": kwargs["region_name"],
}))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "before": False,
        "session": "AioSession",
        "retries": {"total_max_attempts": 3, "mode": "standard"},
        "region": "eu-west-1",
    }
