#!/usr/bin/env bash
# devstack plugin: installs masakari (this project), configures it against devstack's
# Keystone, Nova, database and message bus, and starts masakari-api and masakari-engine.
# devstack sources it with its phase: `stack install|post-config|extra`, `unstack`, `clean`.
# masakari-monitors and masakari-dashboard are not installed here (docs/deployment.md).

function install_masakari {
    setup_develop "$MASAKARI_DIR"
}

function configure_masakari {
    sudo install -d -o "$STACK_USER" "$MASAKARI_CONF_DIR"
    cp "$MASAKARI_LOCAL_API_PASTE_INI" "$MASAKARI_API_PASTE_INI"
    rm -f "$MASAKARI_CONF"
    iniset "$MASAKARI_CONF" DEFAULT debug "$ENABLE_DEBUG_LOG_LEVEL"
    iniset "$MASAKARI_CONF" DEFAULT masakari_api_workers "$API_WORKERS"
    iniset "$MASAKARI_CONF" DEFAULT masakari_api_listen_port "$MASAKARI_SERVICE_PORT"
    iniset "$MASAKARI_CONF" database connection "$(database_connection_url masakari)"
    iniset "$MASAKARI_CONF" wsgi api_paste_config "$MASAKARI_API_PASTE_INI"
    # The engine reaches Nova with the service credentials, as the reference's plugin sets.
    iniset "$MASAKARI_CONF" DEFAULT os_privileged_user_name nova
    iniset "$MASAKARI_CONF" DEFAULT os_privileged_user_auth_url "$KEYSTONE_SERVICE_URI"
    iniset "$MASAKARI_CONF" DEFAULT os_privileged_user_password "$SERVICE_PASSWORD"
    iniset "$MASAKARI_CONF" DEFAULT os_privileged_user_tenant "$SERVICE_PROJECT_NAME"
    # The wake-up cast (optional: the engines poll the database anyway).
    iniset_rpc_backend masakari "$MASAKARI_CONF" DEFAULT
    configure_keystone_authtoken_middleware "$MASAKARI_CONF" masakari
    if [ "$MASAKARI_USE_MOD_WSGI" == "True" ]; then
        write_uwsgi_config "$MASAKARI_UWSGI_CONF" "$MASAKARI_UWSGI" "/instance-ha" "" "masakari-api"
    fi
}

function create_masakari_accounts {
    create_service_user masakari admin
    local service
    service=$(get_or_create_service masakari instance-ha "OpenStack High Availability")
    get_or_create_endpoint "$service" "$REGION_NAME" "$(masakari_url)/v1/\$(tenant_id)s"
}

function masakari_url {
    if [ "$MASAKARI_USE_MOD_WSGI" == "True" ]; then
        echo "$MASAKARI_SERVICE_PROTOCOL://$MASAKARI_SERVICE_HOST/instance-ha"
    else
        echo "$MASAKARI_SERVICE_PROTOCOL://$MASAKARI_SERVICE_HOST:$MASAKARI_SERVICE_PORT"
    fi
}

function init_masakari {
    recreate_database masakari
    masakari-manage --config-file "$MASAKARI_CONF" db sync
}

function start_masakari {
    if is_service_enabled masakari-api; then
        if [ "$MASAKARI_USE_MOD_WSGI" == "True" ]; then
            run_process masakari-api "$(which uwsgi) --procname-prefix masakari-api --ini $MASAKARI_UWSGI_CONF"
        else
            run_process masakari-api "$(which masakari-api) --config-file $MASAKARI_CONF"
        fi
        if ! wait_for_service "$SERVICE_TIMEOUT" "$(masakari_url)"; then
            die $LINENO "masakari-api did not start"
        fi
    fi
    if is_service_enabled masakari-engine; then
        run_process masakari-engine "$(which masakari-engine) --config-file $MASAKARI_CONF"
    fi
}

function stop_masakari {
    stop_process masakari-api
    stop_process masakari-engine
}

function cleanup_masakari {
    remove_uwsgi_config "$MASAKARI_UWSGI_CONF" masakari-api
    sudo rm -rf "$MASAKARI_CONF_DIR"
}

if is_service_enabled masakari; then
    if [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Installing masakari"
        install_masakari
    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        echo_summary "Configuring masakari"
        configure_masakari
        if is_service_enabled key; then
            create_masakari_accounts
        fi
    elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
        echo_summary "Starting masakari"
        init_masakari
        start_masakari
    fi
    if [[ "$1" == "unstack" ]]; then
        stop_masakari
    fi
    if [[ "$1" == "clean" ]]; then
        cleanup_masakari
    fi
fi
