"""validate(): the one gate. Every rule the program would apply, over the settings alone, before
anything is registered or written: the settings' own rules (components/settings/rules/), then
what the layers above them know (the add-on graph, the platform, the smoke test's plan, AWS's
naming and tag rules), all problems in one list. The program (`load_settings`), every CLI command
and the typed components (components/api.py) load settings through here; the components' own
checks stay as a second line and never fire for validated settings.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic.alias_generators import to_camel

from .addons import advertisers
from .addons.catalog import BY_NAME
from .addons.dra_driver import SHARING_FEATURE_GATES, gate_problems
from .addons.graph import AddonGraphError, install_graph
from .addons.kai_queues import topology_enabled, topology_problems
from .addons.kai_scheduler import FALLBACK_QUEUE
from .addons.selected import addon_facts, installed
from .aws.endpoints import endpoint_problems
from .aws.inventory import planned_names
from .aws.launch_rules import launch_problems
from .aws.naming import NAME_RULES, tag_problems
from .aws.tags import node_tags
from .facts.cluster import AddonFacts
from .facts.feature_gate_rules import feature_gate_problems
from .facts.feature_gates import dynamic_mig_on
from .settings.check import check
from .settings.facts import nested, truthy
from .settings.limits import limit_problems
from .settings.load import (
    KNOWN_KEYS,
    KUBECONFIG_KEY,
    PROJECT,
    SETTINGS_KEY,
    SettingsError,
    parse_model,
    read_stack_file,
)
from .settings.model import Settings
from .settings.problems import ROOT, Problem, cut
from .settings.rules import Rule
from .settings.rules.cluster import region_problem
from .settings.rules.queues import leaf_queues
from .settings.rules.smoke import SHARING_UNSUPPORTED
from .settings.secrets import mark_secrets, values_problems
from .smoke.cases import case_problems
from .tables import pins


def _smoke_sharing(s: Settings) -> Iterator[Problem]:
    """smokeTest.sharing puts NVIDIA's GpuConfig (resource.nvidia.com/v1beta1) on the shared cases'
    claims; the DRA driver must read it and have the strategy's feature gate on."""
    t = s.smoke_test
    path = f"{ROOT}.smokeTest"
    if t.time_slicing_interval is not None and t.sharing != "timeSlicing":
        yield f"{path}.timeSlicingInterval", f"applies to sharing timeSlicing only (sharing is {t.sharing})"
    for key, value in (("mpsActiveThreadPercentage", t.mps_active_thread_percentage),
                       ("mpsPinnedMemoryLimitMiB", t.mps_pinned_memory_limit_mib)):
        if value is not None and t.sharing != "mps":
            yield f"{path}.{key}", f"applies to sharing mps only (sharing is {t.sharing})"
    if t.sharing == "none":
        return
    if not (t.shared_claim or t.shared_named_claim):
        yield (f"{path}.sharing", "configures the claims of the shared cases, and neither sharedClaim nor "
                                  "sharedNamedClaim is on: no case would share a GPU")
    if s.platform in SHARING_UNSUPPORTED:
        yield f"{path}.sharing", SHARING_UNSUPPORTED[s.platform]
    values = s.gpu_stack.addons.dra_driver.values
    gate = SHARING_FEATURE_GATES[t.sharing]
    set_to = nested(values, f"featureGates.{gate}")
    if set_to is not None and not truthy(set_to):
        yield (f"{ROOT}.gpuStack.addons.draDriver.values.featureGates.{gate}",
               f"is off, and smokeTest.sharing {t.sharing} needs it: the DRA driver refuses the GpuConfig "
               "without it")
    if t.sharing == "mps" and truthy(nested(values, "featureGates.DynamicMIG")):
        # dra-driver-nvidia-gpu v0.4.1 pkg/featuregates/featuregates.go ValidateFeatureGates.
        yield (f"{ROOT}.gpuStack.addons.draDriver.values.featureGates.DynamicMIG",
               "cannot be on with MPSSupport (smokeTest.sharing mps): the DRA driver refuses to start with both")


def _dynamic_mig(s: Settings) -> Iterator[Problem]:
    """The DRA driver's dynamic MIG beside a MIG manager: the driver cuts the GPUs itself and destroys
    the instances it did not create when its plugin starts, and must be the only one cutting them
    (dra-driver-nvidia-gpu 95932046 site/content/docs/guides/gpu-allocation/mig.md, "Limitations":
    "Do not run mig-parted or nvidia-smi mig while the GPU kubelet plugin is running")."""
    if not dynamic_mig_on(s):
        return
    why = ("the DRA driver's dynamic MIG (gpuStack.addons.draDriver.values.featureGates.DynamicMIG) cuts the GPUs "
           "itself and destroys instances it did not create; the GPU Operator's MIG manager must not cut them too")
    for i, pool in enumerate(s.node_pools):
        if pool.mig is not None:
            yield f"{ROOT}.nodePools[{i}].mig", f"a MIG layout needs the MIG manager: {why}"
    if s.gpu_stack.mig_strategy != "none":
        yield f"{ROOT}.gpuStack.migStrategy", f"{s.gpu_stack.mig_strategy} runs the MIG manager: {why}"


def _addon_credentials(s: Settings) -> Iterator[Problem]:
    """A credential in plain text in an add-on's values (components/settings/secrets.py): the stack
    file, the plan's out/ and the release would hold it in clear; a Pulumi secret is accepted."""
    for key, addon in s.gpu_stack.addons.by_key():
        yield from values_problems(key, addon.values)


def _fallback_queue(s: Settings) -> Iterator[Problem]:
    """KAI gives a workload without a queue label the queue `default-queue` (components/addons/
    kai_scheduler.py FALLBACK_QUEUE); only leaf queues schedule, so a user-defined one must be a leaf."""
    leaves = leaf_queues(s)
    for i, q in enumerate(s.queues):
        if q.name == FALLBACK_QUEUE and q.name not in leaves:
            yield (f"{ROOT}.queues[{i}].name", f"'{FALLBACK_QUEUE}' is where KAI puts workloads without a queue "
                                               "label: it must be a leaf queue (no queue may name it as parent)")


def _aws_names(s: Settings) -> Iterator[Problem]:
    """pulumi-aws auto-naming and AWS's name/tag rules (components/aws/naming.py) on every name the
    program would create: the mock plan never runs the provider's Check, and `up` would fail late."""
    if s.platform != "aws" or s.region is None or region_problem(s.region):
        return  # _region reports it; names need a real region
    environment_too_long = False
    facts = addon_facts(s)  # the add-on set: the same whatever the environment's name
    for planned in planned_names(s, facts):
        for problem in planned.problems():
            named = "named" if planned.explicit is not None else "auto-named like"
            environment_too_long |= planned.field == f"{ROOT}.environment"
            yield (planned.field, f"{planned.token} '{planned.logical}' {named} '{planned.physical}': "
                                  f"{problem} (rule: {NAME_RULES[planned.token].source})")
    if environment_too_long:
        fits = _longest_environment(s, facts)
        yield (f"{ROOT}.environment",
               f"'{cut(s.environment)}' is {len(s.environment)} characters; at most {fits} fit every AWS name "
               f"in {s.region} (names derive from ck8s-<environment>-<region>)")
    # The largest merged tag sets: nodes' (stack tags + cluster, ownership, Name, role[, pool]).
    sets = [node_tags(s, "control-plane", f"{s.cluster_name}-cp-0")]
    sets += [node_tags(s, "worker", f"{s.cluster_name}-{pool.name}", pool=pool.name) for pool in s.node_pools]
    for problem in dict.fromkeys(reason for tags in sets for reason in tag_problems(tags)):
        yield f"{ROOT}.tags", problem


def _topology(s: Settings) -> Iterator[Problem]:
    """What KAI refuses in the Topology the program would apply (components/addons/kai_queues.py)."""
    if topology_enabled(s, installed(s)):
        yield from topology_problems(s)


def _dra_gates(s: Settings) -> Iterator[Problem]:
    """What the DRA driver this stack installs refuses in its feature gates (addons/dra_driver.py)."""
    yield from gate_problems(s, installed(s))


def _dra_manager_addons(s: Settings) -> Iterator[Problem]:
    """gpuStack.draManagedBy operator on the add-ons this stack installs: the GPU Operator runs the DRA
    driver (its GPUCluster), so it must be installed and the standalone chart must not (docs/adr/0048)."""
    if s.gpu_stack.dra_managed_by != "operator":
        return
    names = installed(s)
    if "gpu-operator" not in names:
        explicit = s.gpu_stack.addons.gpu_operator.enabled is False
        yield ((f"{ROOT}.gpuStack.addons.gpuOperator.enabled" if explicit else f"{ROOT}.gpuStack.draManagedBy"),
               "draManagedBy operator needs the GPU Operator, which runs the DRA driver through its GPUCluster: "
               + ("it is switched off" if explicit else f"platform {s.platform} does not install it by default; set "
                  "gpuStack.addons.gpuOperator.enabled true, or draManagedBy chart"))
    if "dra-driver" in names:
        yield (f"{ROOT}.gpuStack.addons.draDriver.enabled",
               "on with draManagedBy operator: the GPUCluster runs the DRA driver, and a second one would publish "
               "the same GPUs as gpu.nvidia.com (leave draDriver.enabled unset, or draManagedBy chart)")


def _aws_launch(s: Settings) -> Iterator[Problem]:
    """AWS's rules for the pools' launches: EFA interfaces, placement groups, reserved capacity and
    zones (components/aws/launch_rules.py): RunInstances would refuse them inside the group, late."""
    yield from launch_problems(s)


def _longest_environment(s: Settings, facts: AddonFacts) -> int:
    """The longest environment name whose derived AWS names all pass, for this region and pools."""
    for n in range(len(s.environment), 0, -1):
        trial = s.model_copy(update={"environment": "e" * n})
        if not any(p.problems() for p in planned_names(trial, facts) if p.field == f"{ROOT}.environment"):
            return n
    return 0


def _one_advertiser(s: Settings) -> Iterator[Problem]:
    """The stack's own overrides may not switch on the advertiser its allocation mode excludes: the
    switches are components/addons/advertisers.py's tables (the graph judges the final values)."""
    if s.gpu_stack.allocation == "dra":
        excluded = {a: tuple(k for k, _ in sw) for a, sw in advertisers.DEVICE_PLUGIN_SWITCHES.items()}
        why = "the device plugin cannot run with DRA GPU allocation (GPUs would be handed out twice)"
    else:
        excluded = {a: tuple(k for group in groups for k, _ in group) for a, groups in advertisers.DRA_SWITCHES.items()}
        why = "DRA GPU allocation cannot run with allocation: device-plugin (GPUs would be handed out twice)"
    for name, keys in excluded.items():
        addon = BY_NAME[name]
        values = addon.addon_settings(s).values
        for k in keys:
            if truthy(nested(values, k)):
                yield f"{ROOT}.gpuStack.addons.{to_camel(addon.settings_key)}.values.{k}", why


def _graph(s: Settings) -> Iterator[Problem]:
    """The add-on install graph AddonSet builds: capabilities, order, advertisers on final values."""
    try:
        install_graph(s)
    except AddonGraphError as exc:
        for problem in exc.problems:
            # The graph words its problems for people; the one about the smoke test's scheduler has a field.
            yield (f"{ROOT}.smokeTest.scheduler" if problem.startswith("smokeTest.scheduler")
                   else f"{ROOT}.gpuStack"), problem


def _platform(s: Settings) -> Iterator[Problem]:
    if s.platform == "kind":
        from .kind.config import kind_problems, render_kind_config

        yield from kind_problems(s)
        try:
            render_kind_config(s)
        except ValueError as exc:
            yield f"{ROOT}.kind", str(exc)


def _smoke_plan(s: Settings) -> Iterator[Problem]:
    """The smoke test's plan on the cluster's facts (the DRA API the Kubernetes version serves ...)."""
    if not s.smoke_test.enabled or s.gpu_stack.allocation != "dra":
        return  # the settings' own rule says the smoke test needs allocation dra
    from .facts.cluster import cluster_facts
    from .smoke.plan import smoke_plan
    from .smoke.values import SmokeConfigError

    if s.platform == "kind":
        from .kind.config import kind_facts

        facts = kind_facts(s)
    else:
        facts = cluster_facts(s)
    try:
        smoke_plan(s, facts, pins.image("smoke-test"))
    except SmokeConfigError as exc:
        # The one it raises past the allocation check: the DRA API the Kubernetes version serves.
        yield f"{ROOT}.kubernetes.track", str(exc)


# After the settings' own rules, in this order; each sees only settings those rules accepted.
BEYOND_SETTINGS: tuple[Rule, ...] = (
    limit_problems, _addon_credentials,
    _dra_manager_addons, _one_advertiser, _fallback_queue, _smoke_sharing, _dynamic_mig, feature_gate_problems,
    _dra_gates,
    _aws_names, _aws_launch,
    endpoint_problems, _topology, case_problems,
    _graph, _platform, _smoke_plan,
)
# The graph's summaries (components/addons/advertisers.py problems()) and the words of the rule that
# names the field behind the same fact: where that rule spoke, the summary goes.
TWO_ADVERTISERS = "two GPU advertisers"
TWO_DRA_DRIVERS = "two DRA drivers"
SAID_BY_A_FIELD = ((TWO_ADVERTISERS, "handed out twice"), (TWO_DRA_DRIVERS, "would publish the same GPUs"))


def validate(settings: Settings) -> list[Problem]:
    """Every problem of these settings, as (field path, reason); [] when the program can run them."""
    found = check(settings)
    for rule in BEYOND_SETTINGS:
        try:
            found += list(rule(settings))
        except (ValueError, KeyError, LookupError, TypeError):
            # A rule above the settings may assume what the rules before it guarantee (a pool with
            # GPU facts, an existing mirror pool, an allReduce pool): when those already failed,
            # they are the message.
            if found:
                continue
            raise
    for summary, specific in SAID_BY_A_FIELD:
        if any(path.startswith(f"{ROOT}.gpuStack.addons.") and specific in why for path, why in found):
            # One fact, one message: the override's own path says it better than the graph's summary.
            found = [(path, why) for path, why in found if not why.startswith(summary)]
    return found


def parse(raw: Any, source: str = "stack config") -> Settings:
    """Raw camelCase settings -> validated Settings, or SettingsError naming every bad path."""
    settings = parse_model(raw, source)
    problems = validate(settings)
    if problems:
        raise SettingsError(source, problems)
    return settings


def from_config(config: Mapping[str, Any], source: str, *, offline: bool = False, secret: bool = False) -> Settings:
    """From a stack's `config:` mapping (keys `ck8s-gpu:*`). `offline` (plan, stamp, preflight)
    tolerates a missing kubeconfig: it is needed only to deploy. `secret`: the engine says the
    settings key holds a Pulumi secret somewhere (components/settings/secrets.py mark_secrets)."""
    unknown = [k for k in config if k.startswith(f"{PROJECT}:") and k not in KNOWN_KEYS]
    problems = [(f"config.{k}", f"unknown key; known: {', '.join(sorted(KNOWN_KEYS))}") for k in unknown]
    if SETTINGS_KEY not in config:
        problems.append((f"config.{SETTINGS_KEY}", "required"))
    if problems:
        raise SettingsError(source, problems)
    raw, misplaced = mark_secrets(config[SETTINGS_KEY], whole_key_secret=secret)
    try:
        settings = parse_model(raw, source)
    except SettingsError as exc:
        raise SettingsError(source, [*exc.problems, *misplaced]) from None
    problems = misplaced + validate(settings)
    if settings.traits.needs_kubeconfig and KUBECONFIG_KEY not in config and not offline:
        problems.append((f"config.{KUBECONFIG_KEY}", f"required for platform {settings.platform}: the program is "
                                                     "handed its cluster (set it with --secret)"))
    if problems:
        raise SettingsError(source, problems)
    return settings


def load_stack(path: Path) -> Settings:
    """A stack file's settings, to read or plan (a kubeconfig is only needed to deploy)."""
    return from_config(read_stack_file(path), str(path), offline=True)


def load_settings() -> Settings:
    """The running program's validated settings, or a clean RunError (no traceback) before any resource."""
    import pulumi

    from .settings.from_pulumi import is_config_secret, project_config

    try:
        return from_config(project_config(PROJECT, frozenset({SETTINGS_KEY})), f"stack {pulumi.get_stack()}",
                           secret=is_config_secret(SETTINGS_KEY))
    except SettingsError as exc:
        raise pulumi.RunError(exc.message) from None
