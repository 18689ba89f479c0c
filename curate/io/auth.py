"""Recognising "this node cannot authenticate to object storage" in an exception, and which bucket it was.

On a cluster every node reads object storage with its own credentials; a node without them fails deep
inside botocore or gcsfs. The runner turns such a failure into one line naming the bucket and the node.
"""

from __future__ import annotations

# botocore, google-auth and azure-identity exceptions that mean missing or unusable credentials
_CREDENTIAL_TYPES = {"NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError", "NoAuthTokenError",
                     "DefaultCredentialsError", "RefreshError", "ClientAuthenticationError", "CredentialUnavailableError"}
# error codes an object store answers with when it does not accept the credentials
_DENIED_CODES = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "ExpiredToken", "InvalidToken",
                 "TokenRefreshRequired", "InvalidClientTokenId", "UnrecognizedClientException", "AuthFailure", "403", "401"}


def _chain(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def bucket_of(exc: BaseException) -> str | None:
    """The bucket the failing call addressed, from the frames of the storage client (s3fs, gcsfs, adlfs)."""
    for e in _chain(exc):
        tb = e.__traceback__
        found = None
        while tb is not None:
            local = tb.tb_frame.f_locals
            kwargs = local.get("kwargs")
            if isinstance(kwargs, dict) and isinstance(kwargs.get("Bucket"), str):
                found = kwargs["Bucket"]
            elif isinstance(local.get("bucket"), str) and local["bucket"]:
                found = local["bucket"]
            tb = tb.tb_next
        if found:
            return found
    return None


def is_auth_failure(exc: BaseException) -> bool:
    """Missing or refused credentials of an object store (a local file's permission error is not one)."""
    for e in _chain(exc):
        if type(e).__name__ in _CREDENTIAL_TYPES:
            return True
        code = str(getattr(e, "response", {}).get("Error", {}).get("Code", "")) if isinstance(getattr(e, "response", None), dict) else ""
        if code in _DENIED_CODES:
            return True
        if isinstance(e, PermissionError) and bucket_of(e) is not None:  # s3fs turns 403 into PermissionError
            return True
    return False
