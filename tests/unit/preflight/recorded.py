"""Replay recorded AWS answers through real boto3 clients (no network, no credentials).

A before-call hook answers each API call from tests/data/aws_responses/<scenario>.json; every
successful answer is first validated against botocore's output shape for that operation, and a
call the scenario did not record fails the test (the boundary asked something unexpected).
Answers with an `Error` become the ClientError boto3 raises for that code. Timestamps are written
as ISO 8601 strings and handed over as the aware datetimes botocore's parser makes of them
(botocore.utils.parse_timestamp, its default timestamp parser), as a real answer would be."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse
from botocore.model import Shape
from botocore.utils import parse_timestamp
from botocore.validate import validate_parameters

RESPONSES = Path(__file__).resolve().parents[2] / "data" / "aws_responses"


def load(scenario: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((RESPONSES / scenario).read_text())
    parent = doc.get("extends")
    if parent is None:
        return doc
    base = load(parent)
    return {**base, **{k: v for k, v in doc.items() if k != "responses"},
            "responses": {**base["responses"], **doc["responses"]}}


def _typed(value: Any, shape: Shape) -> Any:
    """`value` with its timestamp members parsed as botocore's response parser does."""
    if shape.type_name == "timestamp" and isinstance(value, str):
        return parse_timestamp(value)
    if shape.type_name == "structure" and isinstance(value, dict):
        members = shape.members  # type: ignore[attr-defined]
        return {k: _typed(v, members[k]) if k in members else v for k, v in value.items()}
    if shape.type_name == "list" and isinstance(value, list):
        return [_typed(v, shape.member) for v in value]  # type: ignore[attr-defined]
    if shape.type_name == "map" and isinstance(value, dict):
        return {k: _typed(v, shape.value) for k, v in value.items()}  # type: ignore[attr-defined]
    return value


class RecordedSession:
    def __init__(self, scenario: str) -> None:
        self.doc = load(scenario)
        self.region: str = self.doc["region"]
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._session = boto3.Session(aws_access_key_id="recorded", aws_secret_access_key="recorded",
                                      region_name=self.region)

    def __call__(self) -> RecordedSession:  # usable as a SessionFactory
        return self

    def client(self, service: str, region_name: str) -> Any:
        client = self._session.client(service, region_name=region_name)
        client.meta.events.register("before-parameter-build.*.*", self._remember_params)
        client.meta.events.register("before-call.*.*", self._answer)
        return client

    @staticmethod
    def _remember_params(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["recorded_params"] = dict(params)

    def _answer(self, model: Any, context: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        prefix = model.service_model.endpoint_prefix
        service = "service-quotas" if prefix == "servicequotas" else prefix
        key = f"{service}.{model.name}"
        params = context.get("recorded_params", {})
        self.calls.append((key, params))
        recorded = self.doc["responses"].get(key)
        if recorded is None:
            raise AssertionError(f"unrecorded AWS call {key}({params})")
        if "by" in recorded:
            by = params.get(recorded["by"])
            by = ",".join(by) if isinstance(by, list) else by  # a list parameter: its items joined by ","
            answer = recorded["answers"].get(by)
            if answer is None:
                raise AssertionError(f"unrecorded AWS call {key} for {recorded['by']}={by}")
        else:
            answer = recorded
        if "Error" in answer:
            return AWSResponse(None, int(answer.get("status", 400)), {}, None), {"Error": answer["Error"]}
        answer = json.loads(json.dumps(answer))
        if model.output_shape is not None:
            validate_parameters(answer, model.output_shape)
            answer = _typed(answer, model.output_shape)
        return AWSResponse(None, 200, {}, None), answer

    def called(self, key: str) -> list[dict[str, Any]]:
        return [params for k, params in self.calls if k == key]
