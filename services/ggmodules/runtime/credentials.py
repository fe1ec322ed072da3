"""Run-scoped credentials (R50): signed JWTs minted by Registry, verified with the public key alone.

A credential is an EdDSA (Ed25519) JWT signed with Registry's private key (PyJWT with `cryptography`): any
service verifies it with the public key alone, without calling Registry. It travels as
`authorization: Bearer <jwt>` metadata. Claims:

| claim | meaning |
|---|---|
| `iss` | always `ggmodules` |
| `role` | `agent`, `operator`, `observer` or `service` |
| `run` | the one run it opens, or `*` (an operator of every run, a service) |
| `sub` | the agent id (role agent), else a name (`operator`, `observer`, the service's name) |
| `iat`, `exp` | issued at, expires at (seconds since the epoch) |

Expiry is not what ends an agent's writes: ModuleStore refuses the writes of a handed-on agent and, once
Registry has told it the run ended, every write of that run, whatever the credential's `exp`.
"""

from __future__ import annotations

import enum
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ggmodules.core.errors import Reason, Unauthenticated

ALGORITHM = "EdDSA"
ISSUER = "ggmodules"
ANY_RUN = "*"
# Agent, observer and run-operator credentials; service and global operator credentials are minted by
# `ggmodules up` (or a deployment) with their own lifetime.
DEFAULT_TTL_SECONDS = 30 * 24 * 3600
LONG_TTL_SECONDS = 365 * 24 * 3600


class Role(enum.Enum):
    AGENT = "agent"
    OPERATOR = "operator"
    OBSERVER = "observer"
    SERVICE = "service"


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a verified credential says is calling."""

    role: Role
    run_id: str  # ANY_RUN for every run
    subject: str  # the agent id for an agent
    expires: float

    @property
    def agent_id(self) -> str:
        return self.subject if self.role is Role.AGENT else ""

    @property
    def every_run(self) -> bool:
        return self.run_id == ANY_RUN


def new_signing_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def write_key_pair(key: Ed25519PrivateKey, private_path: Path, public_path: Path) -> None:
    """PEM files: the private key readable by its owner only (Registry's), the public one for all."""
    private_path.parent.mkdir(parents=True, exist_ok=True)
    private_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    private_path.chmod(0o600)
    public_path.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )


def load_signing_key(path: str | Path) -> Ed25519PrivateKey:
    key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(f"{path}: not an Ed25519 private key")
    return key


def load_public_key(path: str | Path) -> Ed25519PublicKey:
    key = serialization.load_pem_public_key(Path(path).read_bytes())
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError(f"{path}: not an Ed25519 public key")
    return key


class Signer:
    """Mints credentials (Registry; `ggmodules up` for the operator and the services)."""

    def __init__(self, key: Ed25519PrivateKey, ttl_seconds: int = DEFAULT_TTL_SECONDS) -> None:
        self._key = key
        self._ttl = ttl_seconds

    def mint(
        self,
        role: Role,
        run_id: str,
        subject: str,
        ttl_seconds: int | None = None,
        issued_at: int | None = None,
    ) -> str:
        """`issued_at` (default now) makes minting repeatable: Ed25519 signatures are deterministic, so the
        same claims give the same credential, and a retried call (R49) is answered exactly as the first."""
        now = int(time.time()) if issued_at is None else issued_at
        claims = {
            "iss": ISSUER,
            "role": role.value,
            "run": run_id,
            "sub": subject,
            "iat": now,
            "exp": now + (self._ttl if ttl_seconds is None else ttl_seconds),
        }
        return jwt.encode(claims, self._key, algorithm=ALGORITHM)

    def agent(self, run_id: str, agent_id: str, issued_at: int | None = None) -> str:
        return self.mint(Role.AGENT, run_id, agent_id, issued_at=issued_at)

    def operator(
        self, run_id: str = ANY_RUN, ttl_seconds: int | None = None, issued_at: int | None = None
    ) -> str:
        return self.mint(Role.OPERATOR, run_id, "operator", ttl_seconds, issued_at)

    def observer(self, run_id: str, issued_at: int | None = None) -> str:
        return self.mint(Role.OBSERVER, run_id, "observer", issued_at=issued_at)

    def service(self, name: str, ttl_seconds: int = LONG_TTL_SECONDS) -> str:
        return self.mint(Role.SERVICE, ANY_RUN, name, ttl_seconds)


class Verifier:
    """Checks a credential's signature and claims with the public key alone.

    A verified credential is remembered (at most `cache_size`, least recently used out) so the signature
    of a credential an agent sends on every call is checked once; its expiry is checked on every call.
    """

    def __init__(self, public_key: Ed25519PublicKey, cache_size: int = 4096) -> None:
        self._key = public_key
        self._cache: OrderedDict[str, Principal] = OrderedDict()
        self._cache_size = cache_size

    def verify(self, token: str) -> Principal:
        cached = self._cache.get(token)
        if cached is not None:
            if cached.expires <= time.time():
                self._cache.pop(token, None)
                raise _expired()
            self._cache.move_to_end(token)
            return cached
        principal = self._decode(token)
        self._cache[token] = principal
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return principal

    def _decode(self, token: str) -> Principal:
        try:
            claims = jwt.decode(
                token,
                self._key,
                algorithms=[ALGORITHM],
                issuer=ISSUER,
                options={"require": ["exp", "iat", "iss", "sub", "role", "run"]},
            )
        except jwt.ExpiredSignatureError:
            raise _expired() from None
        except jwt.InvalidSignatureError:
            raise Unauthenticated(
                "the credential's signature does not verify: it was altered or not issued by this suite's "
                "Registry; use a credential the suite minted",
                reason=Reason.CREDENTIAL_INVALID,
            ) from None
        except (jwt.DecodeError, jwt.InvalidAlgorithmError) as err:
            raise _malformed(type(err).__name__) from None
        except jwt.InvalidTokenError as err:
            raise Unauthenticated(
                f"the credential's claims do not verify ({type(err).__name__}); use a credential the suite "
                "minted",
                reason=Reason.CREDENTIAL_INVALID,
            ) from None
        try:
            role = Role(claims["role"])
        except ValueError:
            raise Unauthenticated(
                f"the credential names no known role ({str(claims['role'])[:40]!r}); use a credential the "
                "suite minted",
                reason=Reason.CREDENTIAL_INVALID,
            ) from None
        return Principal(role, str(claims["run"]), str(claims["sub"]), float(claims["exp"]))


def _expired() -> Unauthenticated:
    return Unauthenticated(
        "the credential has expired; ask for a new one (open the agent again, or mint an operator "
        "credential with `ggmodules up`)",
        reason=Reason.CREDENTIAL_EXPIRED,
    )


def _malformed(error: str) -> Unauthenticated:
    return Unauthenticated(
        f"the credential is not a well-formed JWT ({error}); send `authorization: Bearer <credential>` "
        "with the credential as the suite minted it",
        reason=Reason.CREDENTIAL_MALFORMED,
        metadata={"error": error},
    )
