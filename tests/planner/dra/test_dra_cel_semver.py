"""semver() refuses a string with the words of the parser behind it (github.com/blang/semver/v4), which the real
scheduler's CEL runtime error carries.

Found by the differential run against kube-scheduler 1.37.2: `semver('8')` failed there with `No Major.Minor.Patch
elements found`; gpusched said `could not parse '8' as a semantic version`, and accepted some versions the real
parser refuses (a numeric pre-release with a leading zero, an empty pre-release identifier).
"""

from __future__ import annotations

import pytest

from gpusched.planner.dra.cel import CelError, compile_selector, device_view

DEVICE = device_view("gpu.nvidia.com/n0/gpu-0", "gpu.nvidia.com", {}, {})


@pytest.mark.parametrize(
    ("version", "error"),
    [
        ("8", "No Major.Minor.Patch elements found"),
        ("", "Version string empty"),
        ("01.2.3", 'Major number must not contain leading zeroes "01"'),
        ("1.x.3", 'Invalid character(s) found in minor number "x"'),
        ("1.2.03", 'Patch number must not contain leading zeroes "03"'),
        ("1.2.3-", "Prerelease is empty"),
        ("1.2.3-rc..1", "Prerelease is empty"),
        ("1.2.3-01", 'Numeric PreRelease version must not contain leading zeroes "01"'),
        ("1.2.3-a_b", 'Invalid character(s) found in prerelease "a_b"'),
        ("1.2.3+", "Build meta data is empty"),
        ("1..3", 'strconv.ParseUint: parsing "": invalid syntax'),
        ("18446744073709551616.0.0", 'strconv.ParseUint: parsing "18446744073709551616": value out of range'),
    ],
)
def test_a_version_the_parser_refuses_is_a_runtime_error_in_its_words(version, error):
    with pytest.raises(CelError) as refused:
        compile_selector(f"semver('{version}').major() == 1").matches(DEVICE)
    assert str(refused.value).endswith(error)
    assert compile_selector(f"isSemver('{version}')").matches(DEVICE) is False


@pytest.mark.parametrize("version", ["1.2.3", "0.0.0", "1.2.3-rc.1+build.5", "1.2.3-0", "1.2.3-x-y.7a"])
def test_a_version_it_accepts_parses(version):
    assert compile_selector(f"isSemver('{version}') && semver('{version}').major() >= 0").matches(DEVICE) is True
