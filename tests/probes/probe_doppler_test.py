from __future__ import annotations

from typing import TYPE_CHECKING

from quipu.probes import run
from quipu.probes import validate_extraction
from quipu.probes.base import Context
from quipu.probes.base import ProbeResult

if TYPE_CHECKING:
    from conftest import Fakes


def _project(ctx: Context, project: str = 'backend') -> ProbeResult:
    return run(validate_extraction({'probe': 'doppler-project-exists', 'args': {'project': project}}, ctx), ctx)


def _secret(ctx: Context, name: str = 'STRIPE_API_KEY') -> ProbeResult:
    args = {'project': 'backend', 'config': 'prd', 'name': name}
    return run(validate_extraction({'probe': 'doppler-secret-exists', 'args': args}, ctx), ctx)


def test_project_exists(ctx: Context, fakes: Fakes) -> None:
    fakes.add('doppler', stdout='doppler/projects_get.json')
    assert _project(ctx).status == 'pass'
    assert fakes.argvs('doppler') == [['projects', 'get', '--project', 'backend', '--json', '--no-check-version']]


def test_dead_project_fails(ctx: Context, fakes: Fakes) -> None:
    fakes.add('doppler', stderr='doppler/project_not_found.stderr', code=1)
    assert _project(ctx, 'legacy-api') == ('fail', 'Doppler says: Could not find requested project')


def test_not_logged_in_is_unknown(ctx: Context, fakes: Fakes) -> None:
    fakes.add('doppler', stderr='doppler/no_token.stderr', code=1)
    result = _project(ctx)
    assert result.status == 'unknown'
    assert 'doppler login' in result.detail


def test_network_error_is_unknown(ctx: Context, fakes: Fakes) -> None:
    fakes.add('doppler', stderr='doppler/network.stderr', code=1)
    assert _project(ctx).status == 'unknown'


def test_doppler_not_installed_is_unknown(ctx: Context) -> None:
    result = _secret(ctx)
    assert result.status == 'unknown'
    assert 'install the Doppler CLI' in result.detail


def test_secret_exists_by_name_only(ctx: Context, fakes: Fakes) -> None:
    fakes.add('doppler', stdout='doppler/secrets_only_names.json')
    assert _secret(ctx, 'stripe_api_key') == ('pass', 'secret STRIPE_API_KEY exists in backend/prd')
    assert fakes.argvs('doppler') == [[
        'secrets', '--only-names', '--project', 'backend', '--config', 'prd', '--json', '--no-check-version',
    ]]


def test_missing_secret_fails(ctx: Context, fakes: Fakes) -> None:
    fakes.add('doppler', stdout='doppler/secrets_only_names.json')
    assert _secret(ctx, 'SENTRY_DSN').status == 'fail'


def test_secret_in_a_missing_config_fails(ctx: Context, fakes: Fakes) -> None:
    fakes.add('doppler', stderr='doppler/config_not_found.stderr', code=1)
    assert _secret(ctx).status == 'fail'


def test_a_secret_value_is_never_kept(ctx: Context, fakes: Fakes) -> None:
    """Even a CLI that printed values alongside names leaves no trace of them."""
    fakes.add('doppler', stdout='doppler/secrets_with_values.json')
    result = _secret(ctx)
    assert result.status == 'pass'
    assert 'sk_live' not in repr(result)
    assert 'sk_live' not in repr(ctx.log)
    assert all('get' not in argv for argv in fakes.argvs('doppler'))
