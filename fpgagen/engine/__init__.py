"""The one description of the engine for a scheduled model (docs/engine.md).

- `layout`: how a layer's nonzero weights are packed over the PEs of its stage;
- `geometry`: the engine's fixed parameters, and every memory and width of a stage from a few
  numbers per layer (what the cost model prices);
- `memory`: a memory's role, depth, width and kind;
- `plan`: the whole engine of one scheduled model, with the real layouts, tables and images
  (what the back ends render and the manifest records);
- `interface`: its ports and AXI4-Lite control map.
"""

from .plan import EnginePlan, LayerPlan, StagePlan, plan_engine

__all__ = ["EnginePlan", "LayerPlan", "StagePlan", "plan_engine"]
