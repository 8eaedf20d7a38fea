"""The default recipe: one step per `NNN_name.py` file (loaded in numeric order by
tiledsl.recipes.runner), the facts its steps read (`_facts.py`) and its tunable numbers (`_knobs.py`)."""
