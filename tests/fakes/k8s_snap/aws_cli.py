"""A fake `aws` CLI (v2) for the calls the node script makes, strict about arguments, IAM and answers.

Behaviour modelled on the AWS CLI v2 and service API references:
- argument errors exit 252, service errors exit 254 with
  `An error occurred (<Code>) when calling the <Operation> operation: <message>` on stderr
  (AWS CLI User Guide, "Return codes");
- `--query` is JMESPath (the `jmespath` library the CLI itself uses) and `--output text` prints
  lists of lists as tab-separated rows (awscli/formatter.py TextFormatter);
- every call is authorised against the calling instance's role: its inline policy (the document our
  code renders) plus AmazonSSMManagedInstanceCore, evaluated by tests/fakes/aws_iam.py with the
  resource ARN and condition keys the Service Authorization Reference lists for the action;
- ssm send-command checks the document exists, every parameter matches its `allowedPattern`
  (InvalidParameters otherwise), and the target is a running, SSM-managed instance
  (InvalidInstanceId); the command then runs the document's shell lines on the target as root;
  get-command-invocation answers InvocationDoesNotExist first, then InProgress, then the result
  (SSM API reference: GetCommandInvocation); the document's lines run with `sh -c` as the SSM
  agent runs them on Linux (amazon-ssm-agent agent/plugins/runscript, runshell_unix.go), so a
  bash-only construct fails here as it would there;
- elbv2 describe-load-balancers --names answers the load balancer, DNS name included, from its
  creation on (State.Code `provisioning`, then `active`), and LoadBalancerNotFound before it exists
  (Elastic Load Balancing API reference: DescribeLoadBalancers, LoadBalancerNotFoundException);
- a shutdown from inside an instance (instance_initiated_shutdown, the fake `systemctl poweroff`)
  ends it as its InstanceInitiatedShutdownBehavior says, and its group's EC2 health check then
  finds it Unhealthy (below).
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from typing import Any, NoReturn

import jmespath

from tests.fakes import aws_iam
from tests.fakes.k8s_snap import world

ARG_ERROR = 252
SERVICE_ERROR = 254


class AwsError(Exception):
    def __init__(self, code: str, operation: str, message: str) -> None:
        super().__init__(f"An error occurred ({code}) when calling the {operation} operation: {message}")


def _usage(message: str) -> NoReturn:
    print(f"aws: error: {message}", file=sys.stderr)
    sys.exit(ARG_ERROR)


def _options(args: Sequence[str], allowed: dict[str, bool]) -> dict[str, Any]:
    """`--name value` / `--flag` parsing, refusing anything not in `allowed` (name -> takes a value)."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(args):
        name = args[i]
        if not name.startswith("--") or name[2:] not in allowed:
            _usage(f"Unknown options: {name}")
        key = name[2:]
        if allowed[key]:
            if i + 1 >= len(args):
                _usage(f"argument {name}: expected one argument")
            if key in ("filters", "instance-ids", "names"):  # list options: nargs "+" in the CLI
                # nargs="+": every following word up to the next option
                values = []
                i += 1
                while i < len(args) and not args[i].startswith("--"):
                    values.append(args[i])
                    i += 1
                out[key] = values
                continue
            out[key] = args[i + 1]
            i += 2
        else:
            out[key] = True
            i += 1
    return out


def _emit(data: Any, opts: dict[str, Any]) -> None:
    if "query" in opts:
        data = jmespath.search(opts["query"], data)
    fmt = opts.get("output", "json")
    if fmt == "json":
        print(json.dumps(data, indent=4))
        return
    if fmt != "text":
        _usage(f"argument --output: invalid choice: '{fmt}'")
    if data is None:
        return
    if isinstance(data, list):
        rows = data
        if rows and all(isinstance(r, list) for r in rows):
            for r in rows:
                print("\t".join("None" if v is None else str(v) for v in r))
        else:
            print("\t".join(str(v) for v in rows))
    else:
        print(data)


def _caller(state: dict[str, Any]) -> dict[str, Any]:
    me: dict[str, Any] = state["instances"][os.environ["FAKE_INSTANCE"]]
    return me


def _authorize(state: dict[str, Any], operation: str, request: aws_iam.Request) -> None:
    me = _caller(state)
    policies = [*me["role_policies"], aws_iam.SSM_MANAGED_INSTANCE_CORE]
    if not aws_iam.allowed(policies, request):
        arn = f"arn:aws:sts::{state['account']}:assumed-role/{me['role']}/{os.environ['FAKE_INSTANCE']}"
        code = "AccessDeniedException" if request.action.startswith(("secretsmanager", "ssm")) else "AccessDenied"
        raise AwsError(code, operation, f"User: {arn} is not authorized to perform: {request.action} on "
                                        f"resource: {request.resource} because no identity-based policy allows "
                                        f"the {request.action} action")


def _arn(state: dict[str, Any], service: str, rest: str, region: str = "") -> str:
    return f"arn:{state['partition']}:{service}:{region or os.environ['FAKE_REGION']}:{state['account']}:{rest}"


# ------------------------------------------------------------------------------------------ ec2


def describe_instances(state: dict[str, Any], opts: dict[str, Any]) -> Any:
    _authorize(state, "DescribeInstances", aws_iam.Request("ec2:DescribeInstances", "*"))
    filters: list[tuple[str, set[str]]] = []
    for f in opts.get("filters", []):
        m = re.fullmatch(r"Name=([^,]+),Values=(.+)", f)
        if not m:
            _usage(f"Error parsing parameter '--filters': Expected: '=', received: '{f}'")
        filters.append((m[1], set(m[2].split(","))))

    def keep(inst: dict[str, Any]) -> bool:
        for name, values in filters:
            if name.startswith("tag:"):
                if inst["tags"].get(name[4:]) not in values:
                    return False
            elif name == "instance-state-name":
                if inst["state"] not in values:
                    return False
            else:
                raise AwsError("InvalidParameterValue", "DescribeInstances", f"The filter '{name}' is invalid")
        return True

    found = [
        {"InstanceId": iid, "PrivateIpAddress": i["ip"], "PrivateDnsName": i["name"],
         # the CLI prints timestamps as ISO 8601 with the UTC offset (cli_timestamp_format iso8601)
         "LaunchTime": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(i["launched"])),
         "State": {"Name": i["state"]}, "Tags": [{"Key": k, "Value": v} for k, v in i["tags"].items()]}
        for iid, i in sorted(state["instances"].items()) if keep(i)
    ]
    return {"Reservations": [{"Instances": [inst]} for inst in found]}


# ---------------------------------------------------------------------------------------- elbv2


def describe_load_balancers(state: dict[str, Any], opts: dict[str, Any]) -> Any:
    # Describe* of ELBv2 has no resource-level scoping (Service Authorization Reference).
    _authorize(state, "DescribeLoadBalancers", aws_iam.Request("elasticloadbalancing:DescribeLoadBalancers", "*"))
    balancers = state.setdefault("load_balancers", {})
    names = opts.get("names") or sorted(balancers)
    missing = [n for n in names if n not in balancers]
    if missing:
        raise AwsError("LoadBalancerNotFound", "DescribeLoadBalancers", "One or more load balancers not found")
    return {"LoadBalancers": [
        {"LoadBalancerArn": _arn(state, "elasticloadbalancing", f"loadbalancer/net/{n}/0123456789abcdef"),
         "DNSName": balancers[n]["dns"], "LoadBalancerName": n, "Type": "network",
         "Scheme": balancers[n].get("scheme", "internet-facing"),
         "State": {"Code": balancers[n].get("state", "provisioning")}}
        for n in names
    ]}


# ------------------------------------------------------------------------------- secretsmanager


def get_secret_value(state: dict[str, Any], opts: dict[str, Any]) -> Any:
    secret_id = opts.get("secret-id") or _usage("the following arguments are required: --secret-id")
    secret = state["secrets"].get(secret_id)
    arn = secret_id if secret is not None else _arn(state, "secretsmanager", f"secret:{secret_id}")
    _authorize(state, "GetSecretValue", aws_iam.Request("secretsmanager:GetSecretValue", arn))
    if secret is None:
        raise AwsError("ResourceNotFoundException", "GetSecretValue",
                       "Secrets Manager can't find the specified secret.")
    if secret.get("fail_always"):
        raise AwsError("InternalServiceError", "GetSecretValue", "Internal service error")
    if secret.get("fail_next", 0) > 0:
        secret["fail_next"] -= 1
        raise AwsError("ThrottlingException", "GetSecretValue", "Rate exceeded")
    return {"ARN": arn, "Name": arn.split(":")[-1], "SecretString": secret["value"], "VersionId": "v1"}


# ----------------------------------------------------------------------------------------- ssm


def _shorthand_map(text: str) -> dict[str, str]:
    """`--parameters` of send-command: ONE value, a map of string lists, in JSON or in the CLI's
    shorthand `Key1=v,v,Key2=v` (AWS CLI User Guide, "Using shorthand syntax"; the send-command
    reference: `--parameters` (map), "KeyName1=string,string,KeyName2=string,string"). A second
    word is not part of it: the CLI refuses it as an unknown option. The fake's documents take
    single strings: a list of several is refused as SSM would for a String parameter."""
    if not text:
        return {}
    if text.lstrip().startswith("{"):
        try:
            doc = json.loads(text)
        except ValueError:
            _usage(f"Error parsing parameter '--parameters': Invalid JSON: {text}")
        lists = {str(k): v if isinstance(v, list) else [v] for k, v in doc.items()}
    else:
        lists = {}
        key = None
        for token in text.split(","):
            name, eq, value = token.partition("=")
            if eq:
                key = name
                lists[key] = [value]
            elif key is None:
                _usage(f"Error parsing parameter '--parameters': Expected: '=', received: '{token}'")
            else:
                lists[key].append(token)
    out: dict[str, str] = {}
    for k, values in lists.items():
        if len(values) != 1:
            raise AwsError("InvalidParameters", "SendCommand", f"Parameter \"{k}\" takes one String value.")
        out[k] = str(values[0])
    return out


def send_command(state: dict[str, Any], opts: dict[str, Any]) -> Any:
    name = opts.get("document-name") or _usage("the following arguments are required: --document-name")
    targets = opts.get("instance-ids") or _usage("--instance-ids or --targets is required")
    doc_arn = _arn(state, "ssm", f"document/{name}")
    _authorize(state, "SendCommand", aws_iam.Request("ssm:SendCommand", doc_arn))
    document = state["documents"].get(name)
    if document is None:
        raise AwsError("InvalidDocument", "SendCommand", f"Document with name {name} does not exist.")
    params = _shorthand_map(opts.get("parameters", ""))
    declared = document["content"].get("parameters", {})
    for key, value in params.items():
        spec = declared.get(key)
        if spec is None or not re.search(spec.get("allowedPattern", ".*"), value):
            raise AwsError("InvalidParameters", "SendCommand",
                           "document " + name + " does not support parameters." if spec is None else
                           f"Parameter \"{key}\" \"{value}\" fails to match regex pattern {spec['allowedPattern']}.")
    missing = [k for k in declared if k not in params and "default" not in declared[k]]
    if missing:
        raise AwsError("InvalidParameters", "SendCommand", f"Missing required parameters: {missing}")
    # A parameter left out takes its declared default (SSM document syntax: parameters.default).
    params = {**{k: str(v["default"]) for k, v in declared.items() if "default" in v}, **params}
    command_id = str(uuid.uuid4())
    for target in targets:
        inst = state["instances"].get(target)
        tags = inst["tags"] if inst else {}
        _authorize(state, "SendCommand", aws_iam.Request(
            "ssm:SendCommand", _arn(state, "ec2", f"instance/{target}"),
            {f"ssm:resourceTag/{k}": v for k, v in tags.items()}))
        if inst is None or inst["state"] != "running" or not inst.get("ssm_online", True):
            raise AwsError("InvalidInstanceId", "SendCommand", "Instances not in a valid state for account")
    state["commands"][command_id] = {
        "document": name, "parameters": params, "targets": list(targets),
        "caller": os.environ["FAKE_INSTANCE"], "polls": {t: 0 for t in targets}, "results": {},
    }
    world.record(state, os.environ["FAKE_INSTANCE"], f"ssm send-command {name} {' '.join(targets)}")
    return {"Command": {"CommandId": command_id, "DocumentName": name, "Status": "Pending"}}


def _run_document(state: dict[str, Any], command: dict[str, Any], target: str) -> dict[str, Any]:
    """aws:runShellScript steps, with {{ Param }} substituted, as root on the target (its fake snap)."""
    document = state["documents"][command["document"]]["content"]
    lines: list[str] = []
    for step in document["mainSteps"]:
        if step["action"] != "aws:runShellScript":
            raise AssertionError(f"fake SSM runs aws:runShellScript only, not {step['action']}")
        lines += step["inputs"]["runCommand"]
    script = "\n".join(lines)
    for key, value in command["parameters"].items():
        script = re.sub(r"\{\{\s*" + re.escape(key) + r"\s*\}\}", value, script)
    node = state["instances"][target]
    # The target's own root: /snap/... is its snap dir, present only once `snap install` ran there.
    script = script.replace("/snap/", node["root"] + "/snap/")
    env = {"PATH": "/usr/bin:/bin", "FAKE_WORLD": os.environ["FAKE_WORLD"], "FAKE_INSTANCE": target,
           "FAKE_REGION": os.environ["FAKE_REGION"], "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    return {"script": script, "env": env}


def get_command_invocation(opts: dict[str, Any]) -> Any:
    """Three phases: look up (locked), run the document if due (unlocked: the command itself takes
    the world lock, as the target's k8s does), store and answer (locked)."""
    command_id, target = opts.get("command-id", ""), opts.get("instance-id", "")
    with world.locked() as state:
        _authorize(state, "GetCommandInvocation", aws_iam.Request("ssm:GetCommandInvocation", "*"))
        command = state["commands"].get(command_id)
        if command is None or target not in command["targets"]:
            raise AwsError("InvocationDoesNotExist", "GetCommandInvocation", "")
        command["polls"][target] += 1
        polls = command["polls"][target]
        if polls == 1:
            raise AwsError("InvocationDoesNotExist", "GetCommandInvocation", "")
        base = {"CommandId": command_id, "InstanceId": target, "DocumentName": command["document"]}
        if polls == 2:
            return {**base, "Status": "InProgress", "StandardOutputContent": "", "StandardErrorContent": ""}
        plan = None if target in command["results"] else _run_document(state, command, target)
    if plan is not None:
        code, out, err = _run_shell(plan["script"], plan["env"])
        with world.locked() as state:
            state["commands"][command_id]["results"].setdefault(target, {"code": code, "out": out, "err": err})
    result = world.read()["commands"][command_id]["results"][target]
    return {**base, "Status": "Success" if result["code"] == 0 else "Failed", "ResponseCode": result["code"],
            "StandardOutputContent": result["out"][:24000], "StandardErrorContent": result["err"][:8000]}


# --------------------------------------------------------------------------------- autoscaling


def set_instance_health(state: dict[str, Any], opts: dict[str, Any]) -> Any:
    target = opts.get("instance-id") or _usage("the following arguments are required: --instance-id")
    if opts.get("health-status") not in ("Healthy", "Unhealthy"):
        _usage("--health-status must be Healthy or Unhealthy")
    inst = state["instances"].get(target)
    group = inst.get("asg") if inst else None
    if group is None:
        raise AwsError("ValidationError", "SetInstanceHealth", f"Instance Id not found - No managed instance found "
                                                               f"for instance ID: {target}")
    tags = state["asgs"][group]["tags"]
    _authorize(state, "SetInstanceHealth", aws_iam.Request(
        "autoscaling:SetInstanceHealth",
        _arn(state, "autoscaling", f"autoScalingGroup:{uuid.UUID(int=0)}:autoScalingGroupName/{group}"),
        {f"autoscaling:ResourceTag/{k}": v for k, v in tags.items()}))
    inst["health"] = opts["health-status"]
    world.record(state, os.environ["FAKE_INSTANCE"], f"autoscaling set-instance-health {target} {inst['health']}")
    return None


def terminate_instance_in_auto_scaling_group(state: dict[str, Any], opts: dict[str, Any]) -> Any:
    """TerminateInstanceInAutoScalingGroup (API reference; CLI synopsis: --instance-id and one of
    --should-decrement-desired-capacity / --no-should-decrement-desired-capacity, both required by the
    API). IAM: autoscaling:TerminateInstanceInAutoScalingGroup on the group ARN, with its
    autoscaling:ResourceTag/* keys. Answer: {"Activity": {...}} (AWS CLI example output: Description
    `Terminating EC2 instance: <id>`, Cause `At <time> instance <id> was taken out of service in
    response to a user request[, shrinking the capacity from N to N-1].`, StatusCode InProgress).
    The fake terminates the instance at once (no lifecycle hooks); its Node stays (NotReady) until
    someone removes it, as in reality. Desired capacity is only recorded: no replacement is launched."""
    target = opts.get("instance-id") or _usage("the following arguments are required: --instance-id")
    decrement = opts.get("should-decrement-desired-capacity")
    if decrement == opts.get("no-should-decrement-desired-capacity"):
        _usage("the following arguments are required: --should-decrement-desired-capacity | "
               "--no-should-decrement-desired-capacity")
    inst = state["instances"].get(target)
    group = inst.get("asg") if inst else None
    if inst is None or group is None or inst["state"] != "running":
        raise AwsError("ValidationError", "TerminateInstanceInAutoScalingGroup",
                       f"Instance Id not found - No managed instance found for instance ID: {target}")
    asg = state["asgs"][group]
    _authorize(state, "TerminateInstanceInAutoScalingGroup", aws_iam.Request(
        "autoscaling:TerminateInstanceInAutoScalingGroup",
        _arn(state, "autoscaling", f"autoScalingGroup:{uuid.UUID(int=0)}:autoScalingGroupName/{group}"),
        {f"autoscaling:ResourceTag/{k}": v for k, v in asg["tags"].items()}))
    members = [i for i in state["instances"].values() if i.get("asg") == group and i["state"] == "running"]
    capacity = int(asg.get("desired", len(members)))
    inst["state"] = "terminated"
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(world.now(state)))
    cause = f"At {stamp}Z instance {target} was taken out of service in response to a user request"
    if decrement:
        asg["desired"] = capacity - 1
        cause += f", shrinking the capacity from {capacity} to {capacity - 1}"
    from tests.fakes.k8s_snap import invariants

    invariants.check(state, f"termination of {target}")
    world.record(state, os.environ["FAKE_INSTANCE"], f"autoscaling terminate-instance-in-auto-scaling-group {target} "
                                                     f"decrement={bool(decrement)}")
    return {"Activity": {
        "ActivityId": str(uuid.uuid4()), "AutoScalingGroupName": group,
        "Description": f"Terminating EC2 instance: {target}", "Cause": cause + ".",
        "StartTime": f"{stamp}.000Z", "StatusCode": "InProgress", "Progress": 0,
        "Details": json.dumps({"Subnet ID": "subnet-0fake", "Availability Zone": f"{os.environ['FAKE_REGION']}a"}),
    }}


# ------------------------------------------------------------------------ instance-initiated shutdown

# EC2 User Guide, "Change instance initiated shutdown behavior": an OS shutdown (shutdown, poweroff)
# stops an EBS-backed instance unless its InstanceInitiatedShutdownBehavior is `terminate`.
SHUTDOWN_BEHAVIORS = {"stop": "stopped", "terminate": "terminated"}
DEFAULT_SHUTDOWN_BEHAVIOR = "stop"


def instance_initiated_shutdown(state: dict[str, Any], iid: str) -> None:
    """The OS of instance `iid` powered off. A group's instance takes the behaviour its launch
    template sets (the group's `instance_initiated_shutdown_behavior` here); others EC2's default.
    Then the group's EC2 health check: "If the instance status is any state other than running
    ... considers the instance to be unhealthy and launches a replacement" (EC2 Auto Scaling User
    Guide, "Health checks for instances in an Auto Scaling group"); the fake records the verdict
    (`health`) and launches nothing. No IAM: nothing is called, the instance just goes away."""
    inst = state["instances"][iid]
    if inst["state"] != "running":
        raise AssertionError(f"{iid} is {inst['state']}: only a running instance powers off")
    group = inst.get("asg")
    behavior = (state["asgs"][group].get("instance_initiated_shutdown_behavior", DEFAULT_SHUTDOWN_BEHAVIOR)
                if group else DEFAULT_SHUTDOWN_BEHAVIOR)
    if behavior not in SHUTDOWN_BEHAVIORS:
        raise AssertionError(f"InstanceInitiatedShutdownBehavior is stop or terminate, not {behavior!r}")
    inst["state"] = SHUTDOWN_BEHAVIORS[behavior]
    world.record(state, iid, f"ec2 instance-initiated shutdown {iid} {inst['state']}")
    if group is not None:
        inst["health"] = "Unhealthy"
        world.record(state, iid, f"autoscaling ec2 health check {iid} Unhealthy ({inst['state']})")
    from tests.fakes.k8s_snap import invariants

    invariants.check(state, f"shutdown of {iid}")


# ------------------------------------------------------------------------------------------ ecr


ECR_TOKEN_SECONDS = 12 * 3600


def get_authorization_token(state: dict[str, Any], opts: dict[str, Any]) -> Any:
    """ECR API GetAuthorizationToken: `authorizationToken` is base64 of `AWS:<password>`, valid 12
    hours (`expiresAt`), usable on every registry the principal may pull from; no resource-level
    scoping (Service Authorization Reference: ecr:GetAuthorizationToken, Resource "*"). The fake
    keeps what it issued so its containerd can check a mirror's Basic header (containerd.py)."""
    _authorize(state, "GetAuthorizationToken", aws_iam.Request("ecr:GetAuthorizationToken", "*"))
    token = base64.b64encode(f"AWS:{uuid.uuid4().hex}".encode()).decode()
    expires = world.now(state) + ECR_TOKEN_SECONDS
    state.setdefault("ecr_tokens", {})[token] = expires
    region = opts["region"]
    return {"authorizationData": [{"authorizationToken": token, "expiresAt": expires,
                                   "proxyEndpoint": f"https://{state['account']}.dkr.ecr.{region}.amazonaws.com"}]}


# ---------------------------------------------------------------------------------------- main

COMMON = {"region": True, "query": True, "output": True}
OPERATIONS: dict[tuple[str, str], tuple[dict[str, bool], Any]] = {
    ("ec2", "describe-instances"): ({**COMMON, "filters": True}, describe_instances),
    ("elbv2", "describe-load-balancers"): ({**COMMON, "names": True}, describe_load_balancers),
    ("secretsmanager", "get-secret-value"): ({**COMMON, "secret-id": True}, get_secret_value),
    ("ecr", "get-authorization-token"): (COMMON, get_authorization_token),
    ("ssm", "send-command"): (
        {**COMMON, "document-name": True, "instance-ids": True, "parameters": True}, send_command),
    ("ssm", "get-command-invocation"): ({**COMMON, "command-id": True, "instance-id": True}, None),
    ("autoscaling", "set-instance-health"): (
        {**COMMON, "instance-id": True, "health-status": True, "should-respect-grace-period": False,
         "no-should-respect-grace-period": False}, set_instance_health),
    ("autoscaling", "terminate-instance-in-auto-scaling-group"): (
        {**COMMON, "instance-id": True, "should-decrement-desired-capacity": False,
         "no-should-decrement-desired-capacity": False}, terminate_instance_in_auto_scaling_group),
}


def _run_shell(script: str, env: dict[str, str]) -> tuple[int, str, str]:
    done = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, timeout=60, check=False)
    return done.returncode, done.stdout, done.stderr


def main(argv: Sequence[str]) -> int:
    if len(argv) < 2:
        _usage("the following arguments are required: command, operation")
    service, operation, *rest = argv
    if (service, operation) not in OPERATIONS:
        _usage(f"argument operation: Invalid choice: '{service} {operation}' (not modelled by the fake)")
    allowed, handler = OPERATIONS[(service, operation)]
    opts = _options(rest, allowed)
    if opts.get("region") != os.environ["FAKE_REGION"]:
        print(f"Could not connect to the endpoint URL for region {opts.get('region')}", file=sys.stderr)
        return SERVICE_ERROR
    try:
        if handler is None:
            result = get_command_invocation(opts)
        else:
            with world.locked() as state:
                world.record(state, os.environ["FAKE_INSTANCE"], f"aws {service} {operation}")
                result = handler(state, opts)
    except AwsError as exc:
        print(f"\n{exc}", file=sys.stderr)
        return SERVICE_ERROR
    if result is not None:
        _emit(result, opts)
    return 0
