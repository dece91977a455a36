"""Brakes and guards around a running task: the kill switch, approvals for risky calls,
the budget stop and the private virtual display (DESIGN.md section 9)."""
