import os

from hypothesis import HealthCheck, settings

# CI runs on shared, noisy machines: no deadlines, a fixed seed so a landing
# is reproducible, and enough examples to matter within the time budget.
settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    max_examples=150,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    deadline=None,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
