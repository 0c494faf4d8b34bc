"""``strictmcp interceptor``: strictmcp's checks as interceptors of the MCP interceptors
extension (SEP-2624), served over stdio or streamable HTTP to any client or gateway that runs
an interceptor chain.

:mod:`.model` is the extension's vocabulary (interceptors, their hooks and results, the
registry answering ``interceptors/list`` and ``interceptor/invoke``), :mod:`.chain` its chain
execution, :mod:`.checks` strictmcp's five interceptors, :mod:`.server` the JSON-RPC side and
:mod:`.stdio` and :mod:`.http` the transports. All but the last two do no I/O.
docs/interceptors.md says what each interceptor checks, where the tool definitions come from,
and where strictmcp follows the extension's conformance fixtures rather than its proposal's
text.
"""

from .chain import ChainResult, run_chain
from .checks import StrictChecks
from .model import (
    Finding,
    Hook,
    Interceptor,
    Invocation,
    InvokeError,
    Mutation,
    Registry,
    Validation,
)
from .server import InterceptorServer

__all__ = [
    "ChainResult",
    "Finding",
    "Hook",
    "Interceptor",
    "InterceptorServer",
    "Invocation",
    "InvokeError",
    "Mutation",
    "Registry",
    "StrictChecks",
    "Validation",
    "run_chain",
]
