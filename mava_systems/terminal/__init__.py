"""The launching terminal: quiet output, the progress line, log lines that need attention, the
closing summary."""
