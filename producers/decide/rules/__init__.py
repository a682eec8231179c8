"""The decide rules, one module per area; `producers.decide.core` dispatches to them."""
