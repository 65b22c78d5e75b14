from tenants.models.keys import ApiKey, KeyKind
from tenants.models.tenancy import Membership, Role, Tenant

__all__ = ["ApiKey", "KeyKind", "Membership", "Role", "Tenant"]
