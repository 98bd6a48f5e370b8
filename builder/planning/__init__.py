"""An action on the settings -> a plan (operations and steps), its before -> after, cost, capacity
check, make-before-break overlap, GitOps auto's decision, the guard and the plan's description.
Imports only the layers below it.
"""
