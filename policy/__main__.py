"""The ck8s-gpu policy pack: assembles the policies of components/policies. Nothing else.

Constructing PolicyPack starts the analyzer's gRPC server and blocks, so this file is the only
place it happens; tests and the offline run import `components.policies` instead.
"""

import sys
from pathlib import Path

# The policies live in the project's `components` package, one directory up.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import EnforcementLevel, PolicyPack

from components.policies import PACK_NAME, POLICIES

PolicyPack(
    name=PACK_NAME,
    policies=list(POLICIES),
    # Policies carry their own level; this applies only to one that forgot to set it.
    enforcement_level=EnforcementLevel.MANDATORY,
)
