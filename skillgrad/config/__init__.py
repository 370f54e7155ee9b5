"""The typed config: YAML file + `--set key.path=value` overrides + role resolution.

Role precedence (docs/architecture.md, "Backends and the spec registry"): CLI role flag > config
role key > CLI --backend > config model.backend > built-in default. After `load_config`,
`model.optimizer_backend` and `model.target_backend` are always concrete backend names.
"""

from skillgrad.config.fields import BackendName, Schedule
from skillgrad.config.loading import (
    config_from_data,
    load_config,
    resolve_roles,
)
from skillgrad.config.model_section import ModelConfig
from skillgrad.config.optimizer_section import OptimizerConfig
from skillgrad.config.sections import (
    BenchmarkConfig,
    BudgetConfig,
    CacheConfig,
    Config,
    RayConfig,
    SkillConfig,
    TraceConfig,
    TrackingConfig,
    TrainConfig,
)

__all__ = [
    "BackendName",
    "BenchmarkConfig",
    "BudgetConfig",
    "CacheConfig",
    "Config",
    "ModelConfig",
    "OptimizerConfig",
    "RayConfig",
    "Schedule",
    "SkillConfig",
    "TraceConfig",
    "TrackingConfig",
    "TrainConfig",
    "config_from_data",
    "load_config",
    "resolve_roles",
]
