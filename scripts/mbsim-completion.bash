# bash completion for mbsim: subcommands, their words and options, and files.
# Installed as share/bash-completion/completions/mbsim; to try it from the
# source tree: source scripts/mbsim-completion.bash
_mbsim()
{
    local cur prev cmd
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    cmd=${COMP_WORDS[1]}
    local commands="run compare validate sweep merge tune import plot collective calibrate topo systems models help --help --version"

    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$commands" -- "$cur"))
        return
    fi
    case $prev in
        --system)
            COMPREPLY=($(compgen -W "$(mbsim systems 2> /dev/null | tr -d ,)" -- "$cur"))
            return ;;
        --model)
            COMPREPLY=($(compgen -W "$(mbsim models 2> /dev/null | tr -d ,)" -- "$cur"))
            return ;;
        --emit)
            COMPREPLY=($(compgen -W "megatron bridge" -- "$cur"))
            return ;;
        -j|--jobs|--top|--gpus|--ranks|--progress|--mb-cap|--screen|--shard|--set|--name|--gpu|--op|--sizes|--params|--drift-threshold)
            return ;;
        --cv)
            COMPREPLY=($(compgen -W "family family-all" -- "$cur"))
            return ;;
    esac
    local words="" opts=""
    case $cmd in
        run) opts="--json --memory --ops --roofline --trace --emit --help" ;;
        compare) opts="--roofline --help" ;;
        validate) opts="--json --roofline --cv -j --jobs --progress --baseline --drift-threshold --recipes --pairs --help" ;;
        sweep) opts="--set -j --top --tsv --json --shard --no-header --resume --progress --mb-cap --exact --screen --help" ;;
        merge) opts="--tsv --json --help" ;;
        tune) opts="-o --emit --help" ;;
        import)
            [ "$COMP_CWORD" -eq 2 ] && words="megatron bridge hf"
            opts="--system --gpus --model --name -o --help" ;;
        plot)
            [ "$COMP_CWORD" -eq 2 ] && words="validate sweep breakdown gantt"
            opts="-o --help" ;;
        collective) opts="--system --gpus --op --sizes --help" ;;
        calibrate)
            [ "$COMP_CWORD" -eq 2 ] && words="nccl-tests nsys kineto runs"
            opts="--gpu --base --ranks --shapes --params --recipes -o --help" ;;
        topo)
            [ "$COMP_CWORD" -eq 2 ] && words="$(mbsim systems 2> /dev/null | tr -d ,)"
            opts="--json --help" ;;
        systems|models) opts="--json --help" ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    elif [ -n "$words" ]; then
        COMPREPLY=($(compgen -W "$words" -- "$cur") $(compgen -f -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -o filenames -F _mbsim mbsim
