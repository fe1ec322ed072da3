from ggmodules.storage.migrations.env import run

run()
