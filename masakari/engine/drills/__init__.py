"""Fire drills: the recovery path run on purpose on a host an operator names, then undone.

:mod:`.runner` claims drills from the database and runs them; :mod:`.run` is one drill
(check, maintenance, fence, disable, evacuate, then :mod:`.restore`); :mod:`.seam` is the
fenced way each of them changes something and times its phases; :mod:`.schedule` creates
drills on spares on its own ([drill] schedule_interval). docs/operations.md, Fire drills.
"""
