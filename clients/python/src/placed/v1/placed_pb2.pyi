import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ConcernScope(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONCERN_SCOPE_UNSPECIFIED: _ClassVar[ConcernScope]
    CONCERN_SCOPE_UNIT: _ClassVar[ConcernScope]
    CONCERN_SCOPE_ABOVE: _ClassVar[ConcernScope]
    CONCERN_SCOPE_BELOW: _ClassVar[ConcernScope]
    CONCERN_SCOPE_INTERCONNECT: _ClassVar[ConcernScope]
    CONCERN_SCOPE_NODE_WEIGHTS: _ClassVar[ConcernScope]

class InterconnectSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INTERCONNECT_SOURCE_UNSPECIFIED: _ClassVar[InterconnectSource]
    INTERCONNECT_SOURCE_DISTANCES: _ClassVar[InterconnectSource]
    INTERCONNECT_SOURCE_UNIFORM: _ClassVar[InterconnectSource]
    INTERCONNECT_SOURCE_MEASURED: _ClassVar[InterconnectSource]

class PolicyKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    POLICY_KIND_UNSPECIFIED: _ClassVar[PolicyKind]
    POLICY_KIND_MODEL: _ClassVar[PolicyKind]
    POLICY_KIND_CONSERVATIVE: _ClassVar[PolicyKind]
    POLICY_KIND_AGGRESSIVE: _ClassVar[PolicyKind]
    POLICY_KIND_SMART_AGGRESSIVE: _ClassVar[PolicyKind]
    POLICY_KIND_PINNED: _ClassVar[PolicyKind]
    POLICY_KIND_OBSERVE: _ClassVar[PolicyKind]

class ContainerState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONTAINER_STATE_UNSPECIFIED: _ClassVar[ContainerState]
    CONTAINER_STATE_DISCOVERED: _ClassVar[ContainerState]
    CONTAINER_STATE_BASELINE: _ClassVar[ContainerState]
    CONTAINER_STATE_PROBE: _ClassVar[ContainerState]
    CONTAINER_STATE_PREDICTED: _ClassVar[ContainerState]
    CONTAINER_STATE_PLACED: _ClassVar[ContainerState]
    CONTAINER_STATE_WATCHED: _ClassVar[ContainerState]
    CONTAINER_STATE_WAITING: _ClassVar[ContainerState]
    CONTAINER_STATE_MIGRATING: _ClassVar[ContainerState]
    CONTAINER_STATE_FAILED: _ClassVar[ContainerState]

class ContainerRuntime(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONTAINER_RUNTIME_UNSPECIFIED: _ClassVar[ContainerRuntime]
    CONTAINER_RUNTIME_DOCKER: _ClassVar[ContainerRuntime]
    CONTAINER_RUNTIME_PODMAN: _ClassVar[ContainerRuntime]
    CONTAINER_RUNTIME_CONTAINERD: _ClassVar[ContainerRuntime]
    CONTAINER_RUNTIME_CRIO: _ClassVar[ContainerRuntime]
    CONTAINER_RUNTIME_CRI: _ClassVar[ContainerRuntime]
    CONTAINER_RUNTIME_POD: _ClassVar[ContainerRuntime]
    CONTAINER_RUNTIME_LXC: _ClassVar[ContainerRuntime]
    CONTAINER_RUNTIME_SYSTEMD: _ClassVar[ContainerRuntime]
    CONTAINER_RUNTIME_CGROUP: _ClassVar[ContainerRuntime]

class VcpuSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VCPU_SOURCE_UNSPECIFIED: _ClassVar[VcpuSource]
    VCPU_SOURCE_REQUEST: _ClassVar[VcpuSource]
    VCPU_SOURCE_QUOTA: _ClassVar[VcpuSource]
    VCPU_SOURCE_CPUSET: _ClassVar[VcpuSource]

class OnOverride(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ON_OVERRIDE_UNSPECIFIED: _ClassVar[OnOverride]
    ON_OVERRIDE_REASSERT: _ClassVar[OnOverride]
    ON_OVERRIDE_ADOPT: _ClassVar[OnOverride]
    ON_OVERRIDE_LEAVE: _ClassVar[OnOverride]

class OverrideAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OVERRIDE_ACTION_UNSPECIFIED: _ClassVar[OverrideAction]
    OVERRIDE_ACTION_REASSERTED: _ClassVar[OverrideAction]
    OVERRIDE_ACTION_ADOPTED: _ClassVar[OverrideAction]
    OVERRIDE_ACTION_LEFT: _ClassVar[OverrideAction]
    OVERRIDE_ACTION_GAVE_UP: _ClassVar[OverrideAction]

class PerfCounter(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PERF_COUNTER_UNSPECIFIED: _ClassVar[PerfCounter]
    PERF_COUNTER_INSTRUCTIONS: _ClassVar[PerfCounter]
    PERF_COUNTER_IPC: _ClassVar[PerfCounter]

class PatternMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PATTERN_MODE_UNSPECIFIED: _ClassVar[PatternMode]
    PATTERN_MODE_RATE: _ClassVar[PatternMode]
    PATTERN_MODE_TOTAL: _ClassVar[PatternMode]
    PATTERN_MODE_INCREMENT: _ClassVar[PatternMode]

class PatternStream(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PATTERN_STREAM_UNSPECIFIED: _ClassVar[PatternStream]
    PATTERN_STREAM_STDOUT: _ClassVar[PatternStream]
    PATTERN_STREAM_STDERR: _ClassVar[PatternStream]
    PATTERN_STREAM_BOTH: _ClassVar[PatternStream]

class Provenance(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PROVENANCE_UNSPECIFIED: _ClassVar[Provenance]
    PROVENANCE_REAL: _ClassVar[Provenance]
    PROVENANCE_VIRTUAL_MACHINE: _ClassVar[Provenance]
    PROVENANCE_SIMULATED: _ClassVar[Provenance]

class MigrationMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MIGRATION_MODE_UNSPECIFIED: _ClassVar[MigrationMode]
    MIGRATION_MODE_KERNEL: _ClassVar[MigrationMode]
    MIGRATION_MODE_FAST: _ClassVar[MigrationMode]
    MIGRATION_MODE_THROTTLED: _ClassVar[MigrationMode]

class EventKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVENT_KIND_UNSPECIFIED: _ClassVar[EventKind]
    EVENT_KIND_DISCOVERED: _ClassVar[EventKind]
    EVENT_KIND_STATE: _ClassVar[EventKind]
    EVENT_KIND_PREDICTED: _ClassVar[EventKind]
    EVENT_KIND_MIGRATION_STARTED: _ClassVar[EventKind]
    EVENT_KIND_MIGRATION_FINISHED: _ClassVar[EventKind]
    EVENT_KIND_VANISHED: _ClassVar[EventKind]
    EVENT_KIND_ERROR: _ClassVar[EventKind]
    EVENT_KIND_OVERRIDDEN: _ClassVar[EventKind]
    EVENT_KIND_UNMANAGED: _ClassVar[EventKind]
    EVENT_KIND_RESERVED: _ClassVar[EventKind]
    EVENT_KIND_RELEASED: _ClassVar[EventKind]
    EVENT_KIND_CLAIMED: _ClassVar[EventKind]
    EVENT_KIND_BOOKMARK: _ClassVar[EventKind]
    EVENT_KIND_OUTCOME: _ClassVar[EventKind]
    EVENT_KIND_MODEL_STOPPED: _ClassVar[EventKind]
    EVENT_KIND_MODEL_ENABLED: _ClassVar[EventKind]

class PriorKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PRIOR_KIND_UNSPECIFIED: _ClassVar[PriorKind]
    PRIOR_KIND_NOTHING: _ClassVar[PriorKind]
    PRIOR_KIND_CONTAINER: _ClassVar[PriorKind]

class BatchMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BATCH_MODE_UNSPECIFIED: _ClassVar[BatchMode]
    BATCH_MODE_ALL_OR_NOTHING: _ClassVar[BatchMode]
    BATCH_MODE_BEST_EFFORT: _ClassVar[BatchMode]
CONCERN_SCOPE_UNSPECIFIED: ConcernScope
CONCERN_SCOPE_UNIT: ConcernScope
CONCERN_SCOPE_ABOVE: ConcernScope
CONCERN_SCOPE_BELOW: ConcernScope
CONCERN_SCOPE_INTERCONNECT: ConcernScope
CONCERN_SCOPE_NODE_WEIGHTS: ConcernScope
INTERCONNECT_SOURCE_UNSPECIFIED: InterconnectSource
INTERCONNECT_SOURCE_DISTANCES: InterconnectSource
INTERCONNECT_SOURCE_UNIFORM: InterconnectSource
INTERCONNECT_SOURCE_MEASURED: InterconnectSource
POLICY_KIND_UNSPECIFIED: PolicyKind
POLICY_KIND_MODEL: PolicyKind
POLICY_KIND_CONSERVATIVE: PolicyKind
POLICY_KIND_AGGRESSIVE: PolicyKind
POLICY_KIND_SMART_AGGRESSIVE: PolicyKind
POLICY_KIND_PINNED: PolicyKind
POLICY_KIND_OBSERVE: PolicyKind
CONTAINER_STATE_UNSPECIFIED: ContainerState
CONTAINER_STATE_DISCOVERED: ContainerState
CONTAINER_STATE_BASELINE: ContainerState
CONTAINER_STATE_PROBE: ContainerState
CONTAINER_STATE_PREDICTED: ContainerState
CONTAINER_STATE_PLACED: ContainerState
CONTAINER_STATE_WATCHED: ContainerState
CONTAINER_STATE_WAITING: ContainerState
CONTAINER_STATE_MIGRATING: ContainerState
CONTAINER_STATE_FAILED: ContainerState
CONTAINER_RUNTIME_UNSPECIFIED: ContainerRuntime
CONTAINER_RUNTIME_DOCKER: ContainerRuntime
CONTAINER_RUNTIME_PODMAN: ContainerRuntime
CONTAINER_RUNTIME_CONTAINERD: ContainerRuntime
CONTAINER_RUNTIME_CRIO: ContainerRuntime
CONTAINER_RUNTIME_CRI: ContainerRuntime
CONTAINER_RUNTIME_POD: ContainerRuntime
CONTAINER_RUNTIME_LXC: ContainerRuntime
CONTAINER_RUNTIME_SYSTEMD: ContainerRuntime
CONTAINER_RUNTIME_CGROUP: ContainerRuntime
VCPU_SOURCE_UNSPECIFIED: VcpuSource
VCPU_SOURCE_REQUEST: VcpuSource
VCPU_SOURCE_QUOTA: VcpuSource
VCPU_SOURCE_CPUSET: VcpuSource
ON_OVERRIDE_UNSPECIFIED: OnOverride
ON_OVERRIDE_REASSERT: OnOverride
ON_OVERRIDE_ADOPT: OnOverride
ON_OVERRIDE_LEAVE: OnOverride
OVERRIDE_ACTION_UNSPECIFIED: OverrideAction
OVERRIDE_ACTION_REASSERTED: OverrideAction
OVERRIDE_ACTION_ADOPTED: OverrideAction
OVERRIDE_ACTION_LEFT: OverrideAction
OVERRIDE_ACTION_GAVE_UP: OverrideAction
PERF_COUNTER_UNSPECIFIED: PerfCounter
PERF_COUNTER_INSTRUCTIONS: PerfCounter
PERF_COUNTER_IPC: PerfCounter
PATTERN_MODE_UNSPECIFIED: PatternMode
PATTERN_MODE_RATE: PatternMode
PATTERN_MODE_TOTAL: PatternMode
PATTERN_MODE_INCREMENT: PatternMode
PATTERN_STREAM_UNSPECIFIED: PatternStream
PATTERN_STREAM_STDOUT: PatternStream
PATTERN_STREAM_STDERR: PatternStream
PATTERN_STREAM_BOTH: PatternStream
PROVENANCE_UNSPECIFIED: Provenance
PROVENANCE_REAL: Provenance
PROVENANCE_VIRTUAL_MACHINE: Provenance
PROVENANCE_SIMULATED: Provenance
MIGRATION_MODE_UNSPECIFIED: MigrationMode
MIGRATION_MODE_KERNEL: MigrationMode
MIGRATION_MODE_FAST: MigrationMode
MIGRATION_MODE_THROTTLED: MigrationMode
EVENT_KIND_UNSPECIFIED: EventKind
EVENT_KIND_DISCOVERED: EventKind
EVENT_KIND_STATE: EventKind
EVENT_KIND_PREDICTED: EventKind
EVENT_KIND_MIGRATION_STARTED: EventKind
EVENT_KIND_MIGRATION_FINISHED: EventKind
EVENT_KIND_VANISHED: EventKind
EVENT_KIND_ERROR: EventKind
EVENT_KIND_OVERRIDDEN: EventKind
EVENT_KIND_UNMANAGED: EventKind
EVENT_KIND_RESERVED: EventKind
EVENT_KIND_RELEASED: EventKind
EVENT_KIND_CLAIMED: EventKind
EVENT_KIND_BOOKMARK: EventKind
EVENT_KIND_OUTCOME: EventKind
EVENT_KIND_MODEL_STOPPED: EventKind
EVENT_KIND_MODEL_ENABLED: EventKind
PRIOR_KIND_UNSPECIFIED: PriorKind
PRIOR_KIND_NOTHING: PriorKind
PRIOR_KIND_CONTAINER: PriorKind
BATCH_MODE_UNSPECIFIED: BatchMode
BATCH_MODE_ALL_OR_NOTHING: BatchMode
BATCH_MODE_BEST_EFFORT: BatchMode

class GetMachineRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetMachineResponse(_message.Message):
    __slots__ = ("machine",)
    MACHINE_FIELD_NUMBER: _ClassVar[int]
    machine: Machine
    def __init__(self, machine: _Optional[_Union[Machine, _Mapping]] = ...) -> None: ...

class Concern(_message.Message):
    __slots__ = ("name", "title", "scope", "count", "capacity_min", "capacity_max", "lower_cost", "lower_can_raise_perf", "score")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_MIN_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_MAX_FIELD_NUMBER: _ClassVar[int]
    LOWER_COST_FIELD_NUMBER: _ClassVar[int]
    LOWER_CAN_RAISE_PERF_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    name: str
    title: str
    scope: ConcernScope
    count: int
    capacity_min: int
    capacity_max: int
    lower_cost: bool
    lower_can_raise_perf: bool
    score: str
    def __init__(self, name: _Optional[str] = ..., title: _Optional[str] = ..., scope: _Optional[_Union[ConcernScope, str]] = ..., count: _Optional[int] = ..., capacity_min: _Optional[int] = ..., capacity_max: _Optional[int] = ..., lower_cost: _Optional[bool] = ..., lower_can_raise_perf: _Optional[bool] = ..., score: _Optional[str] = ...) -> None: ...

class Unit(_message.Message):
    __slots__ = ("cpus", "mems")
    CPUS_FIELD_NUMBER: _ClassVar[int]
    MEMS_FIELD_NUMBER: _ClassVar[int]
    cpus: str
    mems: str
    def __init__(self, cpus: _Optional[str] = ..., mems: _Optional[str] = ...) -> None: ...

class Machine(_message.Message):
    __slots__ = ("fingerprint", "source", "cpu_model", "usable_pus", "allocation_unit", "units", "concerns", "interconnect_source", "interconnect_detail", "notes")
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    CPU_MODEL_FIELD_NUMBER: _ClassVar[int]
    USABLE_PUS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_UNIT_FIELD_NUMBER: _ClassVar[int]
    UNITS_FIELD_NUMBER: _ClassVar[int]
    CONCERNS_FIELD_NUMBER: _ClassVar[int]
    INTERCONNECT_SOURCE_FIELD_NUMBER: _ClassVar[int]
    INTERCONNECT_DETAIL_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    fingerprint: str
    source: str
    cpu_model: str
    usable_pus: str
    allocation_unit: str
    units: _containers.RepeatedCompositeFieldContainer[Unit]
    concerns: _containers.RepeatedCompositeFieldContainer[Concern]
    interconnect_source: InterconnectSource
    interconnect_detail: str
    notes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, fingerprint: _Optional[str] = ..., source: _Optional[str] = ..., cpu_model: _Optional[str] = ..., usable_pus: _Optional[str] = ..., allocation_unit: _Optional[str] = ..., units: _Optional[_Iterable[_Union[Unit, _Mapping]]] = ..., concerns: _Optional[_Iterable[_Union[Concern, _Mapping]]] = ..., interconnect_source: _Optional[_Union[InterconnectSource, str]] = ..., interconnect_detail: _Optional[str] = ..., notes: _Optional[_Iterable[str]] = ...) -> None: ...

class ListPlacementsRequest(_message.Message):
    __slots__ = ("vcpus", "page_size", "page_token")
    VCPUS_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    vcpus: int
    page_size: int
    page_token: str
    def __init__(self, vcpus: _Optional[int] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class Placement(_message.Message):
    __slots__ = ("id", "units", "cpus", "mems", "scores")
    ID_FIELD_NUMBER: _ClassVar[int]
    UNITS_FIELD_NUMBER: _ClassVar[int]
    CPUS_FIELD_NUMBER: _ClassVar[int]
    MEMS_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    id: str
    units: _containers.RepeatedScalarFieldContainer[int]
    cpus: str
    mems: str
    scores: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, id: _Optional[str] = ..., units: _Optional[_Iterable[int]] = ..., cpus: _Optional[str] = ..., mems: _Optional[str] = ..., scores: _Optional[_Iterable[float]] = ...) -> None: ...

class ListPlacementsResponse(_message.Message):
    __slots__ = ("vcpus", "concerns", "placements", "exact", "bound", "fingerprint", "next_page_token", "total_size")
    VCPUS_FIELD_NUMBER: _ClassVar[int]
    CONCERNS_FIELD_NUMBER: _ClassVar[int]
    PLACEMENTS_FIELD_NUMBER: _ClassVar[int]
    EXACT_FIELD_NUMBER: _ClassVar[int]
    BOUND_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    vcpus: int
    concerns: _containers.RepeatedScalarFieldContainer[str]
    placements: _containers.RepeatedCompositeFieldContainer[Placement]
    exact: bool
    bound: str
    fingerprint: str
    next_page_token: str
    total_size: int
    def __init__(self, vcpus: _Optional[int] = ..., concerns: _Optional[_Iterable[str]] = ..., placements: _Optional[_Iterable[_Union[Placement, _Mapping]]] = ..., exact: _Optional[bool] = ..., bound: _Optional[str] = ..., fingerprint: _Optional[str] = ..., next_page_token: _Optional[str] = ..., total_size: _Optional[int] = ...) -> None: ...

class Policy(_message.Message):
    __slots__ = ("kind", "goal", "placement_id")
    KIND_FIELD_NUMBER: _ClassVar[int]
    GOAL_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_ID_FIELD_NUMBER: _ClassVar[int]
    kind: PolicyKind
    goal: float
    placement_id: str
    def __init__(self, kind: _Optional[_Union[PolicyKind, str]] = ..., goal: _Optional[float] = ..., placement_id: _Optional[str] = ...) -> None: ...

class Container(_message.Message):
    __slots__ = ("id", "name", "runtime", "cgroup", "vcpus", "vcpus_source", "policy", "state", "detail", "placement_id", "cpus", "mems", "units", "model_id", "update_time", "metric", "on_override", "effective_on_override", "cpuset_override", "labels", "outcome")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    CGROUP_FIELD_NUMBER: _ClassVar[int]
    VCPUS_FIELD_NUMBER: _ClassVar[int]
    VCPUS_SOURCE_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_ID_FIELD_NUMBER: _ClassVar[int]
    CPUS_FIELD_NUMBER: _ClassVar[int]
    MEMS_FIELD_NUMBER: _ClassVar[int]
    UNITS_FIELD_NUMBER: _ClassVar[int]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    METRIC_FIELD_NUMBER: _ClassVar[int]
    ON_OVERRIDE_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_ON_OVERRIDE_FIELD_NUMBER: _ClassVar[int]
    CPUSET_OVERRIDE_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    runtime: ContainerRuntime
    cgroup: str
    vcpus: int
    vcpus_source: VcpuSource
    policy: Policy
    state: ContainerState
    detail: str
    placement_id: str
    cpus: str
    mems: str
    units: _containers.RepeatedScalarFieldContainer[int]
    model_id: str
    update_time: _timestamp_pb2.Timestamp
    metric: MetricSpec
    on_override: OnOverride
    effective_on_override: OnOverride
    cpuset_override: CpusetOverride
    labels: _containers.ScalarMap[str, str]
    outcome: DecisionOutcome
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., runtime: _Optional[_Union[ContainerRuntime, str]] = ..., cgroup: _Optional[str] = ..., vcpus: _Optional[int] = ..., vcpus_source: _Optional[_Union[VcpuSource, str]] = ..., policy: _Optional[_Union[Policy, _Mapping]] = ..., state: _Optional[_Union[ContainerState, str]] = ..., detail: _Optional[str] = ..., placement_id: _Optional[str] = ..., cpus: _Optional[str] = ..., mems: _Optional[str] = ..., units: _Optional[_Iterable[int]] = ..., model_id: _Optional[str] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., metric: _Optional[_Union[MetricSpec, _Mapping]] = ..., on_override: _Optional[_Union[OnOverride, str]] = ..., effective_on_override: _Optional[_Union[OnOverride, str]] = ..., cpuset_override: _Optional[_Union[CpusetOverride, _Mapping]] = ..., labels: _Optional[_Mapping[str, str]] = ..., outcome: _Optional[_Union[DecisionOutcome, _Mapping]] = ...) -> None: ...

class DecisionOutcome(_message.Message):
    __slots__ = ("model_id", "provenance", "placement_id", "predicted", "interval_low", "interval_high", "interval_level", "measured", "realized", "error_percent", "inside_interval", "goal", "goal_kept", "time")
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_ID_FIELD_NUMBER: _ClassVar[int]
    PREDICTED_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_LOW_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_HIGH_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_LEVEL_FIELD_NUMBER: _ClassVar[int]
    MEASURED_FIELD_NUMBER: _ClassVar[int]
    REALIZED_FIELD_NUMBER: _ClassVar[int]
    ERROR_PERCENT_FIELD_NUMBER: _ClassVar[int]
    INSIDE_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    GOAL_FIELD_NUMBER: _ClassVar[int]
    GOAL_KEPT_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    model_id: str
    provenance: Provenance
    placement_id: str
    predicted: float
    interval_low: float
    interval_high: float
    interval_level: float
    measured: bool
    realized: float
    error_percent: float
    inside_interval: bool
    goal: float
    goal_kept: bool
    time: _timestamp_pb2.Timestamp
    def __init__(self, model_id: _Optional[str] = ..., provenance: _Optional[_Union[Provenance, str]] = ..., placement_id: _Optional[str] = ..., predicted: _Optional[float] = ..., interval_low: _Optional[float] = ..., interval_high: _Optional[float] = ..., interval_level: _Optional[float] = ..., measured: _Optional[bool] = ..., realized: _Optional[float] = ..., error_percent: _Optional[float] = ..., inside_interval: _Optional[bool] = ..., goal: _Optional[float] = ..., goal_kept: _Optional[bool] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CpusetOverride(_message.Message):
    __slots__ = ("expected_cpus", "expected_mems", "found_cpus", "found_mems", "action", "time")
    EXPECTED_CPUS_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_MEMS_FIELD_NUMBER: _ClassVar[int]
    FOUND_CPUS_FIELD_NUMBER: _ClassVar[int]
    FOUND_MEMS_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    expected_cpus: str
    expected_mems: str
    found_cpus: str
    found_mems: str
    action: OverrideAction
    time: _timestamp_pb2.Timestamp
    def __init__(self, expected_cpus: _Optional[str] = ..., expected_mems: _Optional[str] = ..., found_cpus: _Optional[str] = ..., found_mems: _Optional[str] = ..., action: _Optional[_Union[OverrideAction, str]] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListContainersRequest(_message.Message):
    __slots__ = ("page_size", "page_token", "label_selector")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    label_selector: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., label_selector: _Optional[str] = ...) -> None: ...

class ListContainersResponse(_message.Message):
    __slots__ = ("containers", "next_page_token", "event_sequence")
    CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    EVENT_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    containers: _containers.RepeatedCompositeFieldContainer[Container]
    next_page_token: str
    event_sequence: int
    def __init__(self, containers: _Optional[_Iterable[_Union[Container, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., event_sequence: _Optional[int] = ...) -> None: ...

class GetContainerRequest(_message.Message):
    __slots__ = ("container",)
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    container: str
    def __init__(self, container: _Optional[str] = ...) -> None: ...

class GetContainerResponse(_message.Message):
    __slots__ = ("container",)
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    container: Container
    def __init__(self, container: _Optional[_Union[Container, _Mapping]] = ...) -> None: ...

class PushedMetric(_message.Message):
    __slots__ = ("unit", "total")
    UNIT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    unit: str
    total: bool
    def __init__(self, unit: _Optional[str] = ..., total: _Optional[bool] = ...) -> None: ...

class PrometheusMetric(_message.Message):
    __slots__ = ("url", "selector")
    URL_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    url: str
    selector: str
    def __init__(self, url: _Optional[str] = ..., selector: _Optional[str] = ...) -> None: ...

class CommandMetric(_message.Message):
    __slots__ = ("argv", "total")
    ARGV_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    argv: _containers.RepeatedScalarFieldContainer[str]
    total: bool
    def __init__(self, argv: _Optional[_Iterable[str]] = ..., total: _Optional[bool] = ...) -> None: ...

class PerfMetric(_message.Message):
    __slots__ = ("counter",)
    COUNTER_FIELD_NUMBER: _ClassVar[int]
    counter: PerfCounter
    def __init__(self, counter: _Optional[_Union[PerfCounter, str]] = ...) -> None: ...

class PatternProgram(_message.Message):
    __slots__ = ("argv", "stream")
    ARGV_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    argv: _containers.RepeatedScalarFieldContainer[str]
    stream: PatternStream
    def __init__(self, argv: _Optional[_Iterable[str]] = ..., stream: _Optional[_Union[PatternStream, str]] = ...) -> None: ...

class PatternMetric(_message.Message):
    __slots__ = ("regex", "mode", "program", "file")
    REGEX_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    PROGRAM_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    regex: str
    mode: PatternMode
    program: PatternProgram
    file: str
    def __init__(self, regex: _Optional[str] = ..., mode: _Optional[_Union[PatternMode, str]] = ..., program: _Optional[_Union[PatternProgram, _Mapping]] = ..., file: _Optional[str] = ...) -> None: ...

class MetricSpec(_message.Message):
    __slots__ = ("pushed", "prometheus", "command", "perf", "pattern")
    PUSHED_FIELD_NUMBER: _ClassVar[int]
    PROMETHEUS_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    PERF_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    pushed: PushedMetric
    prometheus: PrometheusMetric
    command: CommandMetric
    perf: PerfMetric
    pattern: PatternMetric
    def __init__(self, pushed: _Optional[_Union[PushedMetric, _Mapping]] = ..., prometheus: _Optional[_Union[PrometheusMetric, _Mapping]] = ..., command: _Optional[_Union[CommandMetric, _Mapping]] = ..., perf: _Optional[_Union[PerfMetric, _Mapping]] = ..., pattern: _Optional[_Union[PatternMetric, _Mapping]] = ...) -> None: ...

class ManageRequest(_message.Message):
    __slots__ = ("container", "vcpus", "policy", "metric", "on_override", "labels", "reservation", "dry_run")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    VCPUS_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    METRIC_FIELD_NUMBER: _ClassVar[int]
    ON_OVERRIDE_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    RESERVATION_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    container: str
    vcpus: int
    policy: Policy
    metric: MetricSpec
    on_override: OnOverride
    labels: _containers.ScalarMap[str, str]
    reservation: str
    dry_run: bool
    def __init__(self, container: _Optional[str] = ..., vcpus: _Optional[int] = ..., policy: _Optional[_Union[Policy, _Mapping]] = ..., metric: _Optional[_Union[MetricSpec, _Mapping]] = ..., on_override: _Optional[_Union[OnOverride, str]] = ..., labels: _Optional[_Mapping[str, str]] = ..., reservation: _Optional[str] = ..., dry_run: _Optional[bool] = ...) -> None: ...

class UnmanageRequest(_message.Message):
    __slots__ = ("container", "restore")
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    RESTORE_FIELD_NUMBER: _ClassVar[int]
    container: str
    restore: bool
    def __init__(self, container: _Optional[str] = ..., restore: _Optional[bool] = ...) -> None: ...

class UnmanageResponse(_message.Message):
    __slots__ = ("container", "name", "restored", "cpus", "mems", "detail")
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    RESTORED_FIELD_NUMBER: _ClassVar[int]
    CPUS_FIELD_NUMBER: _ClassVar[int]
    MEMS_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    container: str
    name: str
    restored: bool
    cpus: str
    mems: str
    detail: str
    def __init__(self, container: _Optional[str] = ..., name: _Optional[str] = ..., restored: _Optional[bool] = ..., cpus: _Optional[str] = ..., mems: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class ManageResponse(_message.Message):
    __slots__ = ("container",)
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    container: Container
    def __init__(self, container: _Optional[_Union[Container, _Mapping]] = ...) -> None: ...

class PredictRequest(_message.Message):
    __slots__ = ("container",)
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    container: str
    def __init__(self, container: _Optional[str] = ...) -> None: ...

class Observation(_message.Message):
    __slots__ = ("placement_id", "value", "low", "high", "unit", "windows", "dropped_windows")
    PLACEMENT_ID_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    LOW_FIELD_NUMBER: _ClassVar[int]
    HIGH_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    WINDOWS_FIELD_NUMBER: _ClassVar[int]
    DROPPED_WINDOWS_FIELD_NUMBER: _ClassVar[int]
    placement_id: str
    value: float
    low: float
    high: float
    unit: str
    windows: int
    dropped_windows: int
    def __init__(self, placement_id: _Optional[str] = ..., value: _Optional[float] = ..., low: _Optional[float] = ..., high: _Optional[float] = ..., unit: _Optional[str] = ..., windows: _Optional[int] = ..., dropped_windows: _Optional[int] = ...) -> None: ...

class PredictedPlacement(_message.Message):
    __slots__ = ("placement_id", "relative", "spread", "interval_low", "interval_high", "interval_level", "measured")
    PLACEMENT_ID_FIELD_NUMBER: _ClassVar[int]
    RELATIVE_FIELD_NUMBER: _ClassVar[int]
    SPREAD_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_LOW_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_HIGH_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_LEVEL_FIELD_NUMBER: _ClassVar[int]
    MEASURED_FIELD_NUMBER: _ClassVar[int]
    placement_id: str
    relative: float
    spread: float
    interval_low: float
    interval_high: float
    interval_level: float
    measured: bool
    def __init__(self, placement_id: _Optional[str] = ..., relative: _Optional[float] = ..., spread: _Optional[float] = ..., interval_low: _Optional[float] = ..., interval_high: _Optional[float] = ..., interval_level: _Optional[float] = ..., measured: _Optional[bool] = ...) -> None: ...

class PredictResponse(_message.Message):
    __slots__ = ("container", "model_id", "provenance", "baseline_id", "probe_id", "observations", "placements", "warnings", "vcpus", "third_measurement")
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    BASELINE_ID_FIELD_NUMBER: _ClassVar[int]
    PROBE_ID_FIELD_NUMBER: _ClassVar[int]
    OBSERVATIONS_FIELD_NUMBER: _ClassVar[int]
    PLACEMENTS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    VCPUS_FIELD_NUMBER: _ClassVar[int]
    THIRD_MEASUREMENT_FIELD_NUMBER: _ClassVar[int]
    container: str
    model_id: str
    provenance: Provenance
    baseline_id: str
    probe_id: str
    observations: _containers.RepeatedCompositeFieldContainer[Observation]
    placements: _containers.RepeatedCompositeFieldContainer[PredictedPlacement]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    vcpus: int
    third_measurement: str
    def __init__(self, container: _Optional[str] = ..., model_id: _Optional[str] = ..., provenance: _Optional[_Union[Provenance, str]] = ..., baseline_id: _Optional[str] = ..., probe_id: _Optional[str] = ..., observations: _Optional[_Iterable[_Union[Observation, _Mapping]]] = ..., placements: _Optional[_Iterable[_Union[PredictedPlacement, _Mapping]]] = ..., warnings: _Optional[_Iterable[str]] = ..., vcpus: _Optional[int] = ..., third_measurement: _Optional[str] = ...) -> None: ...

class RecommendRequest(_message.Message):
    __slots__ = ("container", "policy")
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    container: str
    policy: Policy
    def __init__(self, container: _Optional[str] = ..., policy: _Optional[_Union[Policy, _Mapping]] = ...) -> None: ...

class RecommendResponse(_message.Message):
    __slots__ = ("container", "placement_id", "predicted_relative", "cpus", "mems", "reason", "would_move")
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_ID_FIELD_NUMBER: _ClassVar[int]
    PREDICTED_RELATIVE_FIELD_NUMBER: _ClassVar[int]
    CPUS_FIELD_NUMBER: _ClassVar[int]
    MEMS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    WOULD_MOVE_FIELD_NUMBER: _ClassVar[int]
    container: str
    placement_id: str
    predicted_relative: float
    cpus: str
    mems: str
    reason: str
    would_move: bool
    def __init__(self, container: _Optional[str] = ..., placement_id: _Optional[str] = ..., predicted_relative: _Optional[float] = ..., cpus: _Optional[str] = ..., mems: _Optional[str] = ..., reason: _Optional[str] = ..., would_move: _Optional[bool] = ...) -> None: ...

class PlaceRequest(_message.Message):
    __slots__ = ("container", "placement_id", "policy", "migration", "keep_policy", "dry_run")
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_ID_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    MIGRATION_FIELD_NUMBER: _ClassVar[int]
    KEEP_POLICY_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    container: str
    placement_id: str
    policy: Policy
    migration: MigrationMode
    keep_policy: bool
    dry_run: bool
    def __init__(self, container: _Optional[str] = ..., placement_id: _Optional[str] = ..., policy: _Optional[_Union[Policy, _Mapping]] = ..., migration: _Optional[_Union[MigrationMode, str]] = ..., keep_policy: _Optional[bool] = ..., dry_run: _Optional[bool] = ...) -> None: ...

class PlaceResponse(_message.Message):
    __slots__ = ("container", "placement_id", "cpus", "mems", "moved", "bytes_moved", "duration", "reason")
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_ID_FIELD_NUMBER: _ClassVar[int]
    CPUS_FIELD_NUMBER: _ClassVar[int]
    MEMS_FIELD_NUMBER: _ClassVar[int]
    MOVED_FIELD_NUMBER: _ClassVar[int]
    BYTES_MOVED_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    container: str
    placement_id: str
    cpus: str
    mems: str
    moved: bool
    bytes_moved: int
    duration: _duration_pb2.Duration
    reason: str
    def __init__(self, container: _Optional[str] = ..., placement_id: _Optional[str] = ..., cpus: _Optional[str] = ..., mems: _Optional[str] = ..., moved: _Optional[bool] = ..., bytes_moved: _Optional[int] = ..., duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., reason: _Optional[str] = ...) -> None: ...

class ReportMetricRequest(_message.Message):
    __slots__ = ("container", "value", "time")
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    container: str
    value: float
    time: _timestamp_pb2.Timestamp
    def __init__(self, container: _Optional[str] = ..., value: _Optional[float] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ReportMetricResponse(_message.Message):
    __slots__ = ("accepted", "rejected", "last_error")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    accepted: int
    rejected: int
    last_error: str
    def __init__(self, accepted: _Optional[int] = ..., rejected: _Optional[int] = ..., last_error: _Optional[str] = ...) -> None: ...

class WatchRequest(_message.Message):
    __slots__ = ("container", "resume_after_sequence", "label_selector", "bookmark_interval")
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    RESUME_AFTER_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    BOOKMARK_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    container: str
    resume_after_sequence: int
    label_selector: str
    bookmark_interval: _duration_pb2.Duration
    def __init__(self, container: _Optional[str] = ..., resume_after_sequence: _Optional[int] = ..., label_selector: _Optional[str] = ..., bookmark_interval: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class WatchResponse(_message.Message):
    __slots__ = ("sequence", "time", "container", "kind", "state", "placement_id", "message", "cpuset_override", "labels", "outcome")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CPUSET_OVERRIDE_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    time: _timestamp_pb2.Timestamp
    container: str
    kind: EventKind
    state: ContainerState
    placement_id: str
    message: str
    cpuset_override: CpusetOverride
    labels: _containers.ScalarMap[str, str]
    outcome: DecisionOutcome
    def __init__(self, sequence: _Optional[int] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., container: _Optional[str] = ..., kind: _Optional[_Union[EventKind, str]] = ..., state: _Optional[_Union[ContainerState, str]] = ..., placement_id: _Optional[str] = ..., message: _Optional[str] = ..., cpuset_override: _Optional[_Union[CpusetOverride, _Mapping]] = ..., labels: _Optional[_Mapping[str, str]] = ..., outcome: _Optional[_Union[DecisionOutcome, _Mapping]] = ...) -> None: ...

class GetStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ModelInfo(_message.Message):
    __slots__ = ("id", "vcpus", "provenance", "path", "trained_vcpus", "across_classes")
    ID_FIELD_NUMBER: _ClassVar[int]
    VCPUS_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    TRAINED_VCPUS_FIELD_NUMBER: _ClassVar[int]
    ACROSS_CLASSES_FIELD_NUMBER: _ClassVar[int]
    id: str
    vcpus: int
    provenance: Provenance
    path: str
    trained_vcpus: _containers.RepeatedScalarFieldContainer[int]
    across_classes: bool
    def __init__(self, id: _Optional[str] = ..., vcpus: _Optional[int] = ..., provenance: _Optional[_Union[Provenance, str]] = ..., path: _Optional[str] = ..., trained_vcpus: _Optional[_Iterable[int]] = ..., across_classes: _Optional[bool] = ...) -> None: ...

class StateCount(_message.Message):
    __slots__ = ("state", "count")
    STATE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    state: ContainerState
    count: int
    def __init__(self, state: _Optional[_Union[ContainerState, str]] = ..., count: _Optional[int] = ...) -> None: ...

class GetStatusResponse(_message.Message):
    __slots__ = ("version", "fingerprint", "uptime", "containers", "models", "state_file", "cgroup", "warnings", "live")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    UPTIME_FIELD_NUMBER: _ClassVar[int]
    CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    STATE_FILE_FIELD_NUMBER: _ClassVar[int]
    CGROUP_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    LIVE_FIELD_NUMBER: _ClassVar[int]
    version: str
    fingerprint: str
    uptime: _duration_pb2.Duration
    containers: _containers.RepeatedCompositeFieldContainer[StateCount]
    models: _containers.RepeatedCompositeFieldContainer[ModelInfo]
    state_file: str
    cgroup: str
    warnings: _containers.RepeatedScalarFieldContainer[str]
    live: _containers.RepeatedCompositeFieldContainer[LiveAccuracy]
    def __init__(self, version: _Optional[str] = ..., fingerprint: _Optional[str] = ..., uptime: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., containers: _Optional[_Iterable[_Union[StateCount, _Mapping]]] = ..., models: _Optional[_Iterable[_Union[ModelInfo, _Mapping]]] = ..., state_file: _Optional[str] = ..., cgroup: _Optional[str] = ..., warnings: _Optional[_Iterable[str]] = ..., live: _Optional[_Iterable[_Union[LiveAccuracy, _Mapping]]] = ...) -> None: ...

class LiveAccuracy(_message.Message):
    __slots__ = ("model_id", "provenance", "decisions", "scored", "mean_error_percent", "worst_error_percent", "with_interval", "covered", "with_goal", "goal_kept", "gate", "stopped_since", "stopped_reason")
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    DECISIONS_FIELD_NUMBER: _ClassVar[int]
    SCORED_FIELD_NUMBER: _ClassVar[int]
    MEAN_ERROR_PERCENT_FIELD_NUMBER: _ClassVar[int]
    WORST_ERROR_PERCENT_FIELD_NUMBER: _ClassVar[int]
    WITH_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    COVERED_FIELD_NUMBER: _ClassVar[int]
    WITH_GOAL_FIELD_NUMBER: _ClassVar[int]
    GOAL_KEPT_FIELD_NUMBER: _ClassVar[int]
    GATE_FIELD_NUMBER: _ClassVar[int]
    STOPPED_SINCE_FIELD_NUMBER: _ClassVar[int]
    STOPPED_REASON_FIELD_NUMBER: _ClassVar[int]
    model_id: str
    provenance: Provenance
    decisions: int
    scored: int
    mean_error_percent: float
    worst_error_percent: float
    with_interval: int
    covered: int
    with_goal: int
    goal_kept: int
    gate: str
    stopped_since: _timestamp_pb2.Timestamp
    stopped_reason: str
    def __init__(self, model_id: _Optional[str] = ..., provenance: _Optional[_Union[Provenance, str]] = ..., decisions: _Optional[int] = ..., scored: _Optional[int] = ..., mean_error_percent: _Optional[float] = ..., worst_error_percent: _Optional[float] = ..., with_interval: _Optional[int] = ..., covered: _Optional[int] = ..., with_goal: _Optional[int] = ..., goal_kept: _Optional[int] = ..., gate: _Optional[str] = ..., stopped_since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., stopped_reason: _Optional[str] = ...) -> None: ...

class EnableModelRequest(_message.Message):
    __slots__ = ("model_id",)
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    model_id: str
    def __init__(self, model_id: _Optional[str] = ...) -> None: ...

class EnableModelResponse(_message.Message):
    __slots__ = ("live",)
    LIVE_FIELD_NUMBER: _ClassVar[int]
    live: LiveAccuracy
    def __init__(self, live: _Optional[_Union[LiveAccuracy, _Mapping]] = ...) -> None: ...

class AdmissionHint(_message.Message):
    __slots__ = ("container", "image")
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    container: str
    image: str
    def __init__(self, container: _Optional[str] = ..., image: _Optional[str] = ...) -> None: ...

class AdmitRequest(_message.Message):
    __slots__ = ("name", "vcpus", "policy", "labels", "hint", "reserve", "for_container")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    VCPUS_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    HINT_FIELD_NUMBER: _ClassVar[int]
    RESERVE_FIELD_NUMBER: _ClassVar[int]
    FOR_CONTAINER_FIELD_NUMBER: _ClassVar[int]
    name: str
    vcpus: int
    policy: Policy
    labels: _containers.ScalarMap[str, str]
    hint: AdmissionHint
    reserve: _duration_pb2.Duration
    for_container: str
    def __init__(self, name: _Optional[str] = ..., vcpus: _Optional[int] = ..., policy: _Optional[_Union[Policy, _Mapping]] = ..., labels: _Optional[_Mapping[str, str]] = ..., hint: _Optional[_Union[AdmissionHint, _Mapping]] = ..., reserve: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., for_container: _Optional[str] = ...) -> None: ...

class Prior(_message.Message):
    __slots__ = ("kind", "container", "container_name")
    KIND_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_NAME_FIELD_NUMBER: _ClassVar[int]
    kind: PriorKind
    container: str
    container_name: str
    def __init__(self, kind: _Optional[_Union[PriorKind, str]] = ..., container: _Optional[str] = ..., container_name: _Optional[str] = ...) -> None: ...

class Reservation(_message.Message):
    __slots__ = ("id", "placement_id", "units", "cpus", "mems", "vcpus", "policy", "labels", "for_container", "create_time", "expire_time")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_ID_FIELD_NUMBER: _ClassVar[int]
    UNITS_FIELD_NUMBER: _ClassVar[int]
    CPUS_FIELD_NUMBER: _ClassVar[int]
    MEMS_FIELD_NUMBER: _ClassVar[int]
    VCPUS_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    FOR_CONTAINER_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    id: str
    placement_id: str
    units: _containers.RepeatedScalarFieldContainer[int]
    cpus: str
    mems: str
    vcpus: int
    policy: Policy
    labels: _containers.ScalarMap[str, str]
    for_container: str
    create_time: _timestamp_pb2.Timestamp
    expire_time: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., placement_id: _Optional[str] = ..., units: _Optional[_Iterable[int]] = ..., cpus: _Optional[str] = ..., mems: _Optional[str] = ..., vcpus: _Optional[int] = ..., policy: _Optional[_Union[Policy, _Mapping]] = ..., labels: _Optional[_Mapping[str, str]] = ..., for_container: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Admission(_message.Message):
    __slots__ = ("name", "placement_id", "units", "cpus", "mems", "reason", "predicted_relative", "predicted_low", "predicted_high", "prior", "reservation", "policy", "vcpus")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_ID_FIELD_NUMBER: _ClassVar[int]
    UNITS_FIELD_NUMBER: _ClassVar[int]
    CPUS_FIELD_NUMBER: _ClassVar[int]
    MEMS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    PREDICTED_RELATIVE_FIELD_NUMBER: _ClassVar[int]
    PREDICTED_LOW_FIELD_NUMBER: _ClassVar[int]
    PREDICTED_HIGH_FIELD_NUMBER: _ClassVar[int]
    PRIOR_FIELD_NUMBER: _ClassVar[int]
    RESERVATION_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    VCPUS_FIELD_NUMBER: _ClassVar[int]
    name: str
    placement_id: str
    units: _containers.RepeatedScalarFieldContainer[int]
    cpus: str
    mems: str
    reason: str
    predicted_relative: float
    predicted_low: float
    predicted_high: float
    prior: Prior
    reservation: Reservation
    policy: Policy
    vcpus: int
    def __init__(self, name: _Optional[str] = ..., placement_id: _Optional[str] = ..., units: _Optional[_Iterable[int]] = ..., cpus: _Optional[str] = ..., mems: _Optional[str] = ..., reason: _Optional[str] = ..., predicted_relative: _Optional[float] = ..., predicted_low: _Optional[float] = ..., predicted_high: _Optional[float] = ..., prior: _Optional[_Union[Prior, _Mapping]] = ..., reservation: _Optional[_Union[Reservation, _Mapping]] = ..., policy: _Optional[_Union[Policy, _Mapping]] = ..., vcpus: _Optional[int] = ...) -> None: ...

class AdmitResponse(_message.Message):
    __slots__ = ("admission",)
    ADMISSION_FIELD_NUMBER: _ClassVar[int]
    admission: Admission
    def __init__(self, admission: _Optional[_Union[Admission, _Mapping]] = ...) -> None: ...

class AdmitBatchRequest(_message.Message):
    __slots__ = ("requests", "mode")
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.RepeatedCompositeFieldContainer[AdmitRequest]
    mode: BatchMode
    def __init__(self, requests: _Optional[_Iterable[_Union[AdmitRequest, _Mapping]]] = ..., mode: _Optional[_Union[BatchMode, str]] = ...) -> None: ...

class BatchError(_message.Message):
    __slots__ = ("code", "message", "reason")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    reason: str
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class BatchAnswer(_message.Message):
    __slots__ = ("admission", "error")
    ADMISSION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    admission: Admission
    error: BatchError
    def __init__(self, admission: _Optional[_Union[Admission, _Mapping]] = ..., error: _Optional[_Union[BatchError, _Mapping]] = ...) -> None: ...

class AdmitBatchResponse(_message.Message):
    __slots__ = ("answers",)
    ANSWERS_FIELD_NUMBER: _ClassVar[int]
    answers: _containers.RepeatedCompositeFieldContainer[BatchAnswer]
    def __init__(self, answers: _Optional[_Iterable[_Union[BatchAnswer, _Mapping]]] = ...) -> None: ...

class ListReservationsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListReservationsResponse(_message.Message):
    __slots__ = ("reservations",)
    RESERVATIONS_FIELD_NUMBER: _ClassVar[int]
    reservations: _containers.RepeatedCompositeFieldContainer[Reservation]
    def __init__(self, reservations: _Optional[_Iterable[_Union[Reservation, _Mapping]]] = ...) -> None: ...

class ReleaseReservationRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class ReleaseReservationResponse(_message.Message):
    __slots__ = ("reservation",)
    RESERVATION_FIELD_NUMBER: _ClassVar[int]
    reservation: Reservation
    def __init__(self, reservation: _Optional[_Union[Reservation, _Mapping]] = ...) -> None: ...

class GetCapacityRequest(_message.Message):
    __slots__ = ("vcpus",)
    VCPUS_FIELD_NUMBER: _ClassVar[int]
    vcpus: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, vcpus: _Optional[_Iterable[int]] = ...) -> None: ...

class UnitUse(_message.Message):
    __slots__ = ("unit", "cpus", "mems", "package", "held_by", "reserved_by")
    UNIT_FIELD_NUMBER: _ClassVar[int]
    CPUS_FIELD_NUMBER: _ClassVar[int]
    MEMS_FIELD_NUMBER: _ClassVar[int]
    PACKAGE_FIELD_NUMBER: _ClassVar[int]
    HELD_BY_FIELD_NUMBER: _ClassVar[int]
    RESERVED_BY_FIELD_NUMBER: _ClassVar[int]
    unit: int
    cpus: str
    mems: str
    package: int
    held_by: _containers.RepeatedScalarFieldContainer[str]
    reserved_by: str
    def __init__(self, unit: _Optional[int] = ..., cpus: _Optional[str] = ..., mems: _Optional[str] = ..., package: _Optional[int] = ..., held_by: _Optional[_Iterable[str]] = ..., reserved_by: _Optional[str] = ...) -> None: ...

class CapacityTally(_message.Message):
    __slots__ = ("index", "free_pus", "held_pus", "reserved_pus")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    FREE_PUS_FIELD_NUMBER: _ClassVar[int]
    HELD_PUS_FIELD_NUMBER: _ClassVar[int]
    RESERVED_PUS_FIELD_NUMBER: _ClassVar[int]
    index: int
    free_pus: int
    held_pus: int
    reserved_pus: int
    def __init__(self, index: _Optional[int] = ..., free_pus: _Optional[int] = ..., held_pus: _Optional[int] = ..., reserved_pus: _Optional[int] = ...) -> None: ...

class PlacementsThatFit(_message.Message):
    __slots__ = ("vcpus", "placement_ids", "note")
    VCPUS_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    vcpus: int
    placement_ids: _containers.RepeatedScalarFieldContainer[str]
    note: str
    def __init__(self, vcpus: _Optional[int] = ..., placement_ids: _Optional[_Iterable[str]] = ..., note: _Optional[str] = ...) -> None: ...

class GetCapacityResponse(_message.Message):
    __slots__ = ("units", "nodes", "packages", "fits")
    UNITS_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    PACKAGES_FIELD_NUMBER: _ClassVar[int]
    FITS_FIELD_NUMBER: _ClassVar[int]
    units: _containers.RepeatedCompositeFieldContainer[UnitUse]
    nodes: _containers.RepeatedCompositeFieldContainer[CapacityTally]
    packages: _containers.RepeatedCompositeFieldContainer[CapacityTally]
    fits: _containers.RepeatedCompositeFieldContainer[PlacementsThatFit]
    def __init__(self, units: _Optional[_Iterable[_Union[UnitUse, _Mapping]]] = ..., nodes: _Optional[_Iterable[_Union[CapacityTally, _Mapping]]] = ..., packages: _Optional[_Iterable[_Union[CapacityTally, _Mapping]]] = ..., fits: _Optional[_Iterable[_Union[PlacementsThatFit, _Mapping]]] = ...) -> None: ...
