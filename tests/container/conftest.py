"""Prints the image's measured figures (build time, size, cold start) after the test session."""


def pytest_terminal_summary(terminalreporter):
    lines = getattr(terminalreporter.config, "book_image_figures", [])
    if lines:
        terminalreporter.section("container image figures")
        for line in lines:
            terminalreporter.write_line(line)
