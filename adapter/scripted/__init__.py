"""The built-in scripted OpenAI-compatible endpoint. Its results are always labelled scripted."""

from adapter.scripted.conversation import Conversation, Reply
from adapter.scripted.policies import POLICY_NAMES, decide
from adapter.scripted.server import ServerQuirks, create_scripted_app

__all__ = ["POLICY_NAMES", "Conversation", "Reply", "ServerQuirks", "create_scripted_app", "decide"]
