"""Alembic environment: the service passes its open connection (see db.migrate)."""

from alembic import context

from alphaqos.circuits.models import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
