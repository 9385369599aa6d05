import sys
from rooftop.ops import _support
from rooftop.profile.model import profile_model
for label, pdl, plans in (("pdl on, plans on", True, True), ("pdl off, plans on", False, True),
                          ("pdl off, plans off", False, False)):
    _support.ROW_PDL, _support.PLANS_ENABLED = pdl, plans
    _support.clear_plans()
    case, rows, total = profile_model("tiny", 1, 8, 1, top=40)
    print(label, f"{total:.0f} us", [(r.kernel[:28], r.op, r.calls) for r in rows], flush=True)
