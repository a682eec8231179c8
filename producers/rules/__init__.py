"""The decide rules, one module per area; `producers.decide` dispatches to them."""
