"""The service layer: what a command does, called alike by the CLI (computerops/cli/) and the operator server
(computerops/server/). Each function takes typed input, returns typed results and raises `ServiceError` with a
message for a person; neither front end holds logic of its own beyond parsing and presenting."""
