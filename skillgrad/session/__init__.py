"""A command's session: what `skillgrad train` / `eval` build from a config (`build`), run
(`commands`), continue (`resume`) and project before spending anything (`estimate`)."""
