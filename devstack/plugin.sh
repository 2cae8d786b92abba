#!/usr/bin/env bash
# devstack plugin of masakari (this project). stack.sh and unstack.sh source it once per
# phase, with the phase as arguments:
#   stack install      masakari, python-masakariclient, masakari-dashboard (with horizon);
#                      masakari-monitors (with n-cpu)
#   stack post-config  masakari.conf, the Keystone user and endpoint; masakarimonitors.conf
#   stack extra        the database, masakari-api and masakari-engine; the monitors
#   unstack            stops them all, removes their configuration and the dashboard's links
#   clean              removes their configuration
# devstack/settings holds the variables; docs/deployment.md describes what differs from the
# reference's plugin.

# masakari ---------------------------------------------------------------------------------

function install_masakari {
    setup_develop "$MASAKARI_DIR"
}

function install_masakariclient {
    if use_library_from_git python-masakariclient; then
        git_clone_by_name python-masakariclient
        setup_dev_lib python-masakariclient
    else
        pip_install_gr python-masakariclient
    fi
}

function masakari_url {
    if [ "$MASAKARI_USE_MOD_WSGI" == "True" ]; then
        echo "$MASAKARI_SERVICE_PROTOCOL://$MASAKARI_SERVICE_HOST/instance-ha"
    else
        echo "$MASAKARI_SERVICE_PROTOCOL://$MASAKARI_SERVICE_HOST:$MASAKARI_SERVICE_PORT"
    fi
}

function configure_masakari {
    sudo install -d -o "$STACK_USER" "$MASAKARI_CONF_DIR"
    cp "$MASAKARI_LOCAL_API_PASTE_INI" "$MASAKARI_API_PASTE_INI"
    rm -f "$MASAKARI_CONF"
    iniset "$MASAKARI_CONF" DEFAULT debug "$ENABLE_DEBUG_LOG_LEVEL"
    iniset "$MASAKARI_CONF" DEFAULT use_syslog "$SYSLOG"
    setup_logging "$MASAKARI_CONF"
    iniset "$MASAKARI_CONF" DEFAULT masakari_api_workers "$API_WORKERS"
    if is_service_enabled tls-proxy && [ "$MASAKARI_USE_MOD_WSGI" != "True" ]; then
        iniset "$MASAKARI_CONF" DEFAULT masakari_api_listen_port "$MASAKARI_SERVICE_PORT_INT"
    else
        iniset "$MASAKARI_CONF" DEFAULT masakari_api_listen_port "$MASAKARI_SERVICE_PORT"
    fi
    iniset "$MASAKARI_CONF" database connection "$(database_connection_url masakari)"
    iniset "$MASAKARI_CONF" wsgi api_paste_config "$MASAKARI_API_PASTE_INI"
    # masakari-engine talks to Nova as the nova service user.
    iniset "$MASAKARI_CONF" DEFAULT os_privileged_user_name nova
    iniset "$MASAKARI_CONF" DEFAULT os_privileged_user_password "$SERVICE_PASSWORD"
    iniset "$MASAKARI_CONF" DEFAULT os_privileged_user_tenant "$SERVICE_PROJECT_NAME"
    iniset "$MASAKARI_CONF" DEFAULT os_privileged_user_auth_url "$KEYSTONE_SERVICE_URI"
    # The message bus carries the engine's wake-up cast only: the engines poll the database.
    iniset_rpc_backend masakari "$MASAKARI_CONF" DEFAULT
    configure_keystone_authtoken_middleware "$MASAKARI_CONF" "$MASAKARI_SERVICE_USER"
    if [ "$MASAKARI_USE_MOD_WSGI" == "True" ]; then
        write_uwsgi_config "$MASAKARI_UWSGI_CONF" "$MASAKARI_UWSGI" "/instance-ha" "" "masakari-api"
    fi
}

function create_masakari_accounts {
    create_service_user "$MASAKARI_SERVICE_USER" admin
    local service_id
    service_id=$(get_or_create_service masakari instance-ha "OpenStack High Availability")
    get_or_create_endpoint "$service_id" "$REGION_NAME" "$(masakari_url)/v1/\$(tenant_id)s"
}

function init_masakari {
    recreate_database masakari
    "$MASAKARI_MANAGE" --config-file "$MASAKARI_CONF" db sync
}

function start_masakari {
    if is_service_enabled masakari-api; then
        if [ "$MASAKARI_USE_MOD_WSGI" == "True" ]; then
            run_process masakari-api "$(which uwsgi) --procname-prefix masakari-api --ini $MASAKARI_UWSGI_CONF"
        else
            run_process masakari-api "$MASAKARI_BIN_DIR/masakari-api --config-file $MASAKARI_CONF"
            if is_service_enabled tls-proxy; then
                start_tls_proxy masakari '*' "$MASAKARI_SERVICE_PORT" "$SERVICE_HOST" "$MASAKARI_SERVICE_PORT_INT"
            fi
        fi
        echo "Waiting for masakari-api at $(masakari_url)"
        if ! wait_for_service "$SERVICE_TIMEOUT" "$(masakari_url)"; then
            die $LINENO "masakari-api did not start"
        fi
    fi
    if is_service_enabled masakari-engine; then
        run_process masakari-engine "$MASAKARI_BIN_DIR/masakari-engine --config-file $MASAKARI_CONF"
    fi
}

function stop_masakari {
    stop_process masakari-api
    stop_process masakari-engine
}

function cleanup_masakari {
    if [ "$MASAKARI_USE_MOD_WSGI" == "True" ]; then
        remove_uwsgi_config "$MASAKARI_UWSGI_CONF" masakari-api
    fi
    sudo rm -rf "$MASAKARI_CONF_DIR"
}

# masakari-dashboard -----------------------------------------------------------------------

# Horizon's files that link to the dashboard's (relative to each tree).
MASAKARI_DASHBOARD_LINKS=(
    "local/enabled/_50_masakaridashboard.py"
    "local/local_settings.d/_50_masakari.py"
    "conf/masakari_policy.yaml"
)

function install_masakaridashboard {
    git_clone "$MASAKARI_DASHBOARD_REPO" "$MASAKARI_DASHBOARD_DIR" "$MASAKARI_DASHBOARD_BRANCH"
    setup_develop "$MASAKARI_DASHBOARD_DIR"
    local link
    for link in "${MASAKARI_DASHBOARD_LINKS[@]}"; do
        ln -fs "$MASAKARI_DASHBOARD_DIR/masakaridashboard/$link" \
            "$HORIZON_DIR/openstack_dashboard/$(dirname "$link")/"
    done
}

function uninstall_masakaridashboard {
    local link
    for link in "${MASAKARI_DASHBOARD_LINKS[@]}"; do
        sudo rm -f "$HORIZON_DIR/openstack_dashboard/$link"
    done
}

# masakari-monitors ------------------------------------------------------------------------

# The monitors run_masakarimonitors starts (masakari-hostmonitor needs a pacemaker or
# corosync cluster, which devstack does not build: it is enabled, as in the reference, but
# not started).
MASAKARI_MONITORS_RUN=(masakari-processmonitor masakari-instancemonitor masakari-introspectiveinstancemonitor)

function install_masakarimonitors {
    git_clone "$MASAKARI_MONITORS_REPO" "$MASAKARI_MONITORS_DIR" "$MASAKARI_MONITORS_BRANCH"
    setup_develop "$MASAKARI_MONITORS_DIR"
}

function configure_masakarimonitors {
    sudo install -d -o "$STACK_USER" "$MASAKARI_MONITORS_CONF_DIR"
    rm -f "$MASAKARI_MONITORS_CONF"
    iniset "$MASAKARI_MONITORS_CONF" DEFAULT debug "$ENABLE_DEBUG_LOG_LEVEL"
    iniset "$MASAKARI_MONITORS_CONF" api auth_url "$KEYSTONE_SERVICE_URI"
    iniset "$MASAKARI_MONITORS_CONF" api username "$MASAKARI_SERVICE_USER"
    iniset "$MASAKARI_MONITORS_CONF" api password "$SERVICE_PASSWORD"
    iniset "$MASAKARI_MONITORS_CONF" api project_name "$SERVICE_PROJECT_NAME"
    iniset "$MASAKARI_MONITORS_CONF" api user_domain_id "$MASAKARI_MONITORS_DOMAIN_ID"
    iniset "$MASAKARI_MONITORS_CONF" api project_domain_id "$MASAKARI_MONITORS_DOMAIN_ID"
    iniset "$MASAKARI_MONITORS_CONF" api region "$REGION_NAME"
    # An empty list: masakari-processmonitor runs and watches nothing until processes are
    # added (it reads the file again each round). An empty file would stop it at once.
    local process_list=$MASAKARI_MONITORS_CONF_DIR/process_list.yaml
    if [ ! -s "$process_list" ]; then
        echo "[]" > "$process_list"
    fi
    iniset "$MASAKARI_MONITORS_CONF" process process_list_path "$process_list"
}

function run_masakarimonitors {
    local monitor
    for monitor in "${MASAKARI_MONITORS_RUN[@]}"; do
        if is_service_enabled "$monitor"; then
            run_process "$monitor" "$MASAKARI_BIN_DIR/$monitor --config-file $MASAKARI_MONITORS_CONF"
        fi
    done
}

function stop_masakarimonitors {
    local monitor
    for monitor in "${MASAKARI_MONITORS_RUN[@]}"; do
        stop_process "$monitor"
    done
}

function cleanup_masakarimonitors {
    sudo rm -rf "$MASAKARI_MONITORS_CONF_DIR"
}

# The phases -------------------------------------------------------------------------------

if is_service_enabled masakari-api masakari-engine; then
    case "$1 $2" in
        "stack install")
            echo_summary "Installing masakari"
            install_masakari
            install_masakariclient
            if is_service_enabled horizon; then
                echo_summary "Installing masakari-dashboard"
                install_masakaridashboard
            fi
            ;;
        "stack post-config")
            echo_summary "Configuring masakari"
            configure_masakari
            if is_service_enabled key; then
                create_masakari_accounts
            fi
            ;;
        "stack extra")
            echo_summary "Starting masakari"
            init_masakari
            start_masakari
            ;;
        "unstack ")
            stop_masakari
            cleanup_masakari
            if is_service_enabled horizon; then
                uninstall_masakaridashboard
            fi
            ;;
        "clean ")
            cleanup_masakari
            ;;
    esac
fi

if is_service_enabled masakari-monitors && is_service_enabled n-cpu; then
    case "$1 $2" in
        "stack install")
            echo_summary "Installing masakari-monitors"
            install_masakarimonitors
            ;;
        "stack post-config")
            echo_summary "Configuring masakari-monitors"
            configure_masakarimonitors
            ;;
        "stack extra")
            echo_summary "Starting masakari-monitors"
            run_masakarimonitors
            ;;
        "unstack ")
            stop_masakarimonitors
            cleanup_masakarimonitors
            ;;
        "clean ")
            cleanup_masakarimonitors
            ;;
    esac
fi
