# PlatformIO test runner for mcu-gen projects (test_framework = custom): the
# firmware prints "TEST <name> PASS" / "TEST <name> FAIL <why>" and
# "TESTS DONE" (over semihosting under QEMU); no Unity download needed.
from platformio.public import TestCase, TestRunnerBase, TestStatus


class CustomTestRunner(TestRunnerBase):
    EXTRA_LIB_DEPS = None

    def on_testing_line_output(self, line):
        print(line, end="")
        parts = line.strip().split(maxsplit=3)
        if len(parts) >= 3 and parts[0] == "TEST":
            status = TestStatus.PASSED if parts[2] == "PASS" else TestStatus.FAILED
            self.test_suite.add_case(TestCase(name=parts[1], status=status,
                                              message=parts[3] if len(parts) > 3 else None))
        elif line.strip() == "TESTS DONE":
            self.test_suite.on_finish()
